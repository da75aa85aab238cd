"""``manage.py pull_slurm``: the window since the last successful pull, the import of what
sacct printed (the real one-node Slurm's answer to the pull's own command line, and the
kept real capture), and failures that say what to do."""

import shlex
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.core.management import CommandError, call_command
from django.test import override_settings

from apps.slurm.models import SlurmImport, SlurmJob, SlurmPull
from apps.slurm.pull import SACCT_FIELDS, due_clusters, pull_cluster
from apps.slurm.tasks import pull_due_clusters_task
from tests.factories import ClusterFactory, UserFactory
from tests.slurm.harness import KEPT_PATH

pytestmark = pytest.mark.django_db


def fake_sacct(directory: Path, text: str, *, code: int = 0, stderr: str = "") -> Path:
    """A script standing in for sacct: it keeps its arguments (one a line) and prints
    ``text``, or ``stderr`` with exit ``code``."""
    output = directory / "sacct-output.txt"
    output.write_text(text)
    script = directory / "sacct"
    lines = [
        "#!/bin/sh",
        f'for argument in "$@"; do echo "$argument"; done >> {shlex.quote(str(directory))}/args',
    ]
    if stderr:
        lines.append(f"echo {shlex.quote(stderr)} >&2")
    lines.append(f"exit {code}" if code else f"cat {shlex.quote(str(output))}")
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)
    return script


def _arguments(directory: Path) -> list[str]:
    return (directory / "args").read_text().splitlines()


def _job_rows(text: str) -> set[str]:
    """The job ids of the text's job rows (no step), read from the JobID column by name."""
    header, *lines = text.splitlines()
    column = header.split("|").index("JobID")
    return {line.split("|")[column] for line in lines if "." not in line.split("|")[column]}


@pytest.mark.slurm
def test_a_pull_imports_what_the_real_slurm_printed_for_its_command(slurm_sacct_output, tmp_path):
    # The harness ran the pull's own command line on the live cluster (every field the
    # importer reads, --endtime=now): its text imports without a refused line.
    text = slurm_sacct_output.pull_text
    assert text.splitlines()[0] == SACCT_FIELDS.replace(",", "|")
    cluster = ClusterFactory(name="Real", timezone="UTC")
    script = fake_sacct(tmp_path, text)
    call_command("pull_slurm", "--cluster", "Real", "--sacct", str(script))
    pull = SlurmPull.objects.get(cluster=cluster)
    assert pull.status == SlurmPull.Status.SUCCEEDED
    record = pull.slurm_import
    assert (record.source, record.rejected, record.errors) == (SlurmImport.Source.PULL, 0, [])
    assert set(SlurmJob.objects.filter(cluster=cluster).values_list("job_id", flat=True)) == (
        _job_rows(text)
    )
    assert record.accepted == len(_job_rows(text))


def test_pulls_ask_from_the_last_success_and_import_idempotently(tmp_path):
    cluster = ClusterFactory(name="Hopper", slug="hopper", timezone="Asia/Shanghai")
    text = KEPT_PATH.read_text()
    script = fake_sacct(tmp_path, text)
    first_at = datetime(2026, 12, 7, 2, 0, tzinfo=UTC)
    with override_settings(SLURM_PULL_FIRST_DAYS=7, SLURM_PULL_OVERLAP_MINUTES=60):
        from apps.slurm.pull import pull_cluster

        first = pull_cluster(cluster, sacct=str(script), now=first_at)
        # The first pull asks for 7 days, in the cluster's local time (UTC+8).
        assert _arguments(tmp_path) == [
            "--parsable2",
            "--allusers",
            "--starttime=2026-11-30T10:00:00",
            "--endtime=now",
            f"--format={SACCT_FIELDS}",
        ]
        (tmp_path / "args").unlink()
        second = pull_cluster(cluster, sacct=str(script), now=first_at + timedelta(hours=1))
    # The next asks from the last success's end less the hour of overlap.
    assert _arguments(tmp_path)[2] == "--starttime=2026-12-07T09:00:00"
    assert second.since == first_at - timedelta(hours=1)
    jobs = _job_rows(text)
    # The kept capture is sacct --duplicates: the requeued job's second row is refused.
    assert first.slurm_import.accepted == len(jobs)
    assert first.slurm_import.rejected == 1
    assert (second.slurm_import.accepted, second.slurm_import.duplicates) == (0, len(jobs))
    assert SlurmJob.objects.filter(cluster=cluster).count() == len(jobs)


def test_a_failed_pull_says_what_to_do_and_keeps_the_window(tmp_path, client):
    cluster = ClusterFactory(name="Hopper", slug="hopper")
    missing = tmp_path / "no-such-sacct"
    with pytest.raises(CommandError, match="sacct was not found at .*no-such-sacct.*SLURM_SACCT"):
        call_command("pull_slurm", "--cluster", "hopper", "--sacct", str(missing))
    script = fake_sacct(
        tmp_path,
        "",
        code=1,
        stderr="sacct: error: Problem talking to the database: Connection refused",
    )
    with pytest.raises(CommandError) as raised:
        call_command("pull_slurm", "--cluster", "hopper", "--sacct", str(script))
    assert str(raised.value) == (
        "sacct ended with exit code 1: sacct: error: Problem talking to the database: "
        "Connection refused. Check that slurmdbd answers from this machine and that "
        "SLURM_CONF names the cluster's slurm.conf."
    )
    pulls = list(SlurmPull.objects.filter(cluster=cluster).order_by("started_at", "pk"))
    assert [pull.status for pull in pulls] == [SlurmPull.Status.FAILED] * 2
    assert (pulls[1].exit_code, pulls[1].slurm_import) == (1, None)
    assert "Connection refused" in pulls[1].stderr
    client.force_login(UserFactory())
    page = client.get(cluster.get_absolute_url()).content.decode()
    assert "Problem talking to the database: Connection refused. Check that slurmdbd" in page
    with pytest.raises(CommandError, match="No cluster is named 'nowhere'. Known clusters: "):
        call_command("pull_slurm", "--cluster", "nowhere")


def test_a_pull_cut_by_its_time_limit_ends_failed_and_keeps_nothing(tmp_path, monkeypatch):
    cluster = ClusterFactory(name="Hopper", slug="hopper")
    text = KEPT_PATH.read_text()

    def out_of_time(*_arguments, **_keywords):
        raise SoftTimeLimitExceeded

    monkeypatch.setattr("apps.slurm.pull.import_sacct", out_of_time)
    pull = pull_cluster(cluster, sacct=str(fake_sacct(tmp_path, text)))
    assert pull.status == SlurmPull.Status.FAILED
    assert pull.error.startswith("Importing sacct's answer ran past the task's time limit")
    assert not SlurmJob.objects.filter(cluster=cluster).exists()


def test_beat_pulls_the_clusters_whose_interval_has_passed(monkeypatch, settings):
    now = datetime(2026, 12, 7, 2, 0, tzinfo=UTC)
    never = ClusterFactory(slurm_pull_enabled=True)
    recent = ClusterFactory(slurm_pull_enabled=True, slurm_pull_interval_minutes=60)
    old = ClusterFactory(slurm_pull_enabled=True, slurm_pull_interval_minutes=30)
    ClusterFactory(slurm_pull_enabled=True, archived_at=now)
    ClusterFactory(slurm_pull_enabled=False)
    for cluster, minutes in ((recent, 59), (old, 30)):
        SlurmPull.objects.create(
            cluster=cluster,
            started_at=now - timedelta(minutes=minutes),
            since=now,
            until=now,
            status=SlurmPull.Status.FAILED,
        )
    assert {cluster.pk for cluster in due_clusters(now)} == {never.pk, old.pk}
    queued = []
    monkeypatch.setattr("apps.slurm.tasks.pull_cluster_task.delay", queued.append)
    monkeypatch.setattr("apps.slurm.tasks.timezone.now", lambda: now)
    assert pull_due_clusters_task() == 2
    entry = settings.CELERY_BEAT_SCHEDULE["pull-slurm-accounting"]
    assert entry["task"] == pull_due_clusters_task.name
    assert sorted(queued) == sorted([never.pk, old.pk])
