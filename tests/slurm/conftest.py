"""The real one-node Slurm (tests/slurm/harness.py): its capture starts as soon as tests
marked ``slurm`` are collected, in a background thread, and those tests run last, so that
the wait for its jobs (a time-out job cannot end sooner than Slurm's one-minute limit)
overlaps the rest of the suite."""

import pytest

from tests.slurm.harness import BackgroundCapture, SacctCapture, SlurmHarnessError

CAPTURE = BackgroundCapture()


def _needs_slurm(item) -> bool:
    """Tests marked ``slurm`` read the capture (some through a parametrized fixture, which
    ``fixturenames`` does not show)."""
    return item.get_closest_marker("slurm") is not None


def pytest_collection_modifyitems(items):
    """The tests of the capture go last: each xdist worker starts with a contiguous share
    of the tests, so the worker that gets these reaches them after its other tests."""
    items.sort(key=_needs_slurm)


def pytest_collection_finish(session):
    if any(_needs_slurm(item) for item in session.items):
        CAPTURE.start()


def pytest_sessionfinish(session, exitstatus):
    stopped = exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.USAGE_ERROR)
    CAPTURE.finish(interrupted=stopped)


@pytest.fixture(scope="session")
def slurm_sacct_output() -> SacctCapture:
    """``sacct --parsable2 --duplicates`` of the jobs a real one-node Slurm ran, started at
    most once per test run."""
    try:
        return CAPTURE.result()
    except SlurmHarnessError as error:
        pytest.fail(f"the real Slurm run failed: {error}", pytrace=False)
