"""The importer (apps/slurm) reads what a real one-node Slurm printed: the kept capture's
GPU-hours computed by hand, a fresh capture's against the text's own columns."""

from decimal import ROUND_HALF_UP, Decimal

import pytest

from apps.slurm.models import SlurmJob
from apps.slurm.sacct import parse_sacct
from tests.factories import ClusterFactory
from tests.slurm.harness import kept_capture

pytestmark = pytest.mark.slurm


def _by_columns(text: str) -> list[tuple[str, str, int, int]]:
    """(JobID, first word of State, gres/gpu=N, ElapsedRaw) of each job row, read from the
    columns by name: the independent figure the importer's are compared with."""
    header, *lines = text.splitlines()
    names = header.split("|")
    found = []
    for line in lines:
        row = dict(zip(names, line.split("|"), strict=True))
        if "." in row["JobID"]:
            continue
        tres = dict(item.split("=") for item in row["AllocTRES"].split(","))
        found.append(
            (row["JobID"], row["State"].split()[0], int(tres["gres/gpu"]), int(row["ElapsedRaw"]))
        )
    return found


def test_the_kept_capture_reads_with_gpu_hours_from_job_rows_only():
    parsed = parse_sacct(kept_capture().text)
    assert parsed.errors == []
    jobs = [
        (row.job_id, row.state, row.gpus, row.gpu_type, row.elapsed_seconds) for row in parsed.jobs
    ]
    assert jobs == [
        ("1", "TIMEOUT", 1, "a100", 89),
        ("2", "REQUEUED", 1, "a100", 0),
        ("3", "COMPLETED", 2, "a100", 3),
        ("4", "FAILED", 1, "a100", 1),
        ("6", "CANCELLED", 1, "a100", 2),
        ("5_0", "COMPLETED", 1, "a100", 2),
        ("5_1", "COMPLETED", 1, "a100", 2),
        ("2", "COMPLETED", 1, "a100", 2),
    ]
    # Each job's .batch and .extern, the requeued job's twice: they add no GPU-hours,
    # though the .extern rows repeat the whole allocation.
    assert len(parsed.steps) == 16
    gpu_seconds = sum(row.gpus * row.elapsed_seconds for row in parsed.jobs)
    # 1×89 + 1×0 + 2×3 + 1×1 + 1×2 + 1×2 + 1×2 + 1×2 = 104 GPU-seconds
    assert gpu_seconds == 104


def test_this_runs_capture_reads_as_its_columns_say(slurm_sacct_output):
    parsed = parse_sacct(slurm_sacct_output.text)
    assert parsed.errors == []
    assert [
        (row.job_id, row.state, row.gpus, int(row.elapsed_seconds)) for row in parsed.jobs
    ] == _by_columns(slurm_sacct_output.text)


@pytest.mark.django_db
def test_this_runs_capture_imports_each_job_once_with_its_gpu_hours(slurm_sacct_output):
    from apps.slurm.services import import_sacct

    cluster = ClusterFactory(timezone="UTC")
    text = slurm_sacct_output.text_without_duplicates
    result = import_sacct(cluster, text)
    expected = _by_columns(text)
    assert (result.accepted, result.rejected, result.errors) == (len(expected), 0, [])
    assert len(expected) == 7, "six jobs (two array tasks), the requeued one's last run"
    stored = {
        job.job_id: (job.state, job.gpus, job.gpu_hours)
        for job in SlurmJob.objects.filter(cluster=cluster)
    }
    assert stored == {
        job_id: (
            state,
            gpus,
            (Decimal(gpus * elapsed) / 3600).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP),
        )
        for job_id, state, gpus, elapsed in expected
    }
    assert stored[slurm_sacct_output.job_ids["requeued"]][0] == "COMPLETED"


@pytest.mark.django_db
def test_the_duplicates_of_a_requeued_job_are_refused_by_line():
    """``sacct --duplicates`` prints a requeued job's runs under one JobID; the importer
    keeps the first (REQUEUED) and refuses the later run with its line number."""
    from apps.slurm.services import import_sacct

    result = import_sacct(ClusterFactory(), kept_capture().text)
    assert (result.accepted, result.rejected) == (7, 1)
    assert [error.line for error in result.errors] == [23]
    assert SlurmJob.objects.get(job_id="2").state == "REQUEUED"
