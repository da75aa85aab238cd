"""What a real one-node Slurm's ``sacct`` says about the jobs the harness ran.

Each fact is checked on this run's capture and on the capture kept in
tests/data/slurm/real-one-node-cluster.sacct (the same harness, an earlier run), so the
kept file is known to say what the harness makes Slurm say. The rows are read here only
as far as a test needs to name them (split at ``|`` under the header); reading sacct for
gpufleet is the importer's work.
"""

import pytest

from tests.slurm.harness import SACCT_FORMAT, SacctCapture, kept_capture

# The kept file's tests too: a run that leaves Slurm out (-m "not slurm") leaves them out.
pytestmark = pytest.mark.slurm

# What each job asked for (harness.run_the_jobs): --gres=gpu:2 for one, one GPU for the rest.
GPUS = {"completed": 2, "failed": 1, "timeout": 1, "requeued": 1, "cancelled": 1, "array": 1}


@pytest.fixture(params=["this run", "kept file"])
def capture(request) -> SacctCapture:
    if request.param == "kept file":
        return kept_capture()
    return request.getfixturevalue("slurm_sacct_output")


def rows(capture: SacctCapture) -> list[dict[str, str]]:
    header, *lines = capture.text.splitlines()
    names = header.split("|")
    return [dict(zip(names, line.split("|"), strict=True)) for line in lines]


def job_rows(capture: SacctCapture, job_id: str) -> list[dict[str, str]]:
    """The job's own rows (not its steps'), in sacct's order: a requeued job has two."""
    return [row for row in rows(capture) if row["JobID"] == job_id]


def test_the_header_names_the_fields_asked_for(capture):
    assert capture.text.splitlines()[0] == SACCT_FORMAT.replace(",", "|")


def test_each_job_ends_as_the_harness_asked(capture):
    ids = capture.job_ids
    states = {
        purpose: [row["State"] for row in job_rows(capture, ids[purpose])]
        for purpose in ("completed", "failed", "timeout", "requeued", "cancelled")
    }
    assert states == {
        "completed": ["COMPLETED"],
        "failed": ["FAILED"],
        "timeout": ["TIMEOUT"],
        # The run that was requeued, then the run that completed, with --duplicates.
        "requeued": ["REQUEUED", "COMPLETED"],
        # sacct names who cancelled it: root, uid 0.
        "cancelled": ["CANCELLED by 0"],
    }
    tasks = [job_rows(capture, f"{ids['array']}_{index}") for index in (0, 1)]
    assert [[row["State"] for row in task] for task in tasks] == [["COMPLETED"], ["COMPLETED"]]


def test_the_timeout_ran_its_one_minute_limit(capture):
    (row,) = job_rows(capture, capture.job_ids["timeout"])
    # The limit is 60 s; slurmctld finds jobs past it within its 30 s check.
    assert 60 <= int(row["ElapsedRaw"]) <= 60 + 30 + 5


def test_every_job_row_holds_its_gpus_typed_and_untyped(capture):
    ids = capture.job_ids
    expected = {}
    found = {}
    for purpose, gpus in GPUS.items():
        names = [ids[purpose]] if purpose != "array" else [f"{ids['array']}_0", f"{ids['array']}_1"]
        for name in names:
            for index, row in enumerate(job_rows(capture, name)):
                tres = row["AllocTRES"].split(",")
                expected[(name, index)] = [f"gres/gpu:a100={gpus}", f"gres/gpu={gpus}"]
                found[(name, index)] = [item for item in tres if item.startswith("gres/gpu")]
    assert found == expected
    assert len(found) == 8, "six jobs, two array tasks and a requeued run"


def test_every_job_has_its_batch_and_extern_steps(capture):
    all_rows = rows(capture)
    jobs = {row["JobID"] for row in all_rows if "." not in row["JobID"]}
    steps = {row["JobID"] for row in all_rows if "." in row["JobID"]}
    assert steps == {f"{job}.{step}" for job in jobs for step in ("batch", "extern")}
    # A step row names no user, partition or QOS: those are the job's.
    step_rows = [row for row in all_rows if "." in row["JobID"]]
    assert {(row["User"], row["Partition"], row["QOS"]) for row in step_rows} == {("", "", "")}


def test_every_job_ran_on_the_one_node_in_the_test_account(capture):
    jobs = [row for row in rows(capture) if "." not in row["JobID"]]
    assert {
        (row["User"], row["Account"], row["Partition"], row["QOS"], row["NNodes"], row["NodeList"])
        for row in jobs
    } == {("root", "ml-research", "gpu", "normal", "1", "gpu01")}


def test_the_run_took_what_its_jobs_cost(slurm_sacct_output):
    # Five seconds to start on an idle machine; the timeout's 60 to 90 s bound the jobs.
    assert 0 < slurm_sacct_output.seconds_to_ready < 60
    assert 60 < slurm_sacct_output.seconds_to_jobs_ended < 240
    assert slurm_sacct_output.cluster.startswith("gpufleet")
