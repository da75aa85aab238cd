"""An import run's status and counts agree with what is stored: rows that stay stored are
never reported by a failed run (it succeeded, and says which step after storing them
failed), and a failed run stored nothing and reports 0 accepted.

The failures are real: another session holds a table the step needs ACCESS EXCLUSIVE (as
a migration or a VACUUM FULL does) and this session's ``lock_timeout`` gives up on it.
The uploads run as they do where Celery is eager: the import, then its rollup, inline in
the request."""

from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError, connection
from django.urls import reverse
from django.utils import timezone

from apps.telemetry.models import GpuSample, ImportRun, PendingRollup, PoolHourlyUsage
from apps.telemetry.rollups import hourly

SCRAPE = (
    Path(__file__).resolve().parents[1] / "data" / "dcgm-exporter" / "scrapes"
) / "upcloud_L40S_driver595.prom"  # one L40S
# Inside the raw retention: older rows would first be checked against final hours.
SCRAPED_AT = (timezone.now() - timedelta(hours=2)).replace(second=0, microsecond=0)
HOUR = SCRAPED_AT.replace(minute=0)


@contextmanager
def _held_by_another_session(table: str):
    """``table`` locked ACCESS EXCLUSIVE by another session until the block ends, while
    this session waits at most 300 ms for a lock."""
    database = connection.settings_dict
    other = psycopg.connect(
        host=database["HOST"] or "127.0.0.1",
        port=database["PORT"] or 5432,
        user=database["USER"],
        password=database["PASSWORD"] or None,
        dbname=database["NAME"],
    )
    try:
        other.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '300ms'")
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
        other.rollback()
        other.close()


def _upload(client, pool):
    return client.post(
        reverse("telemetry:import_create"),
        {
            "kind": "gpu",
            "format": "dcgm",
            "scraped_at": SCRAPED_AT.strftime("%Y-%m-%dT%H:%M:%S"),
            "time_zone": "UTC",
            "pool": pool.pk,
            "file": SimpleUploadedFile(SCRAPE.name, SCRAPE.read_bytes()),
        },
    )


@pytest.fixture
def lead_client(client, make_user, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    client.force_login(make_user("lead"))
    return client


# Transactional: the upload's commit is what runs the import, and its commit the rollup.
@pytest.mark.django_db(transaction=True)
def test_a_rollup_that_fails_after_the_rows_are_stored_leaves_the_run_succeeded(
    lead_client, pool, eager_celery
):
    with _held_by_another_session("telemetry_poolhourlyusage"):
        response = _upload(lead_client, pool)
    assert response.status_code == 302

    run = ImportRun.objects.get()
    # The row is stored and counted, so the run has not failed; it says what did.
    assert GpuSample.objects.filter(device__pool=pool, timestamp=SCRAPED_AT).count() == 1
    assert (run.status, run.rows_accepted) == (ImportRun.Status.SUCCEEDED, 1)
    assert run.message.startswith("1 rows accepted, 0 duplicates skipped, 0 rows rejected")
    assert "Its samples are stored, but rolling up their hours failed (" in run.message
    assert "lock timeout" in run.message
    assert "the hours stay queued and the next rollup retries them" in run.message
    assert run.message_in_language() == run.message  # said again from its sentences
    listed = lead_client.get(reverse("telemetry:import_list")).content.decode()
    assert "Succeeded" in listed and "Failed" not in listed

    # Still queued: the next drain (beat's, every minute) rolls the hour up.
    assert list(PendingRollup.objects.values_list("pool_id", "hour")) == [(pool.pk, HOUR)]
    assert not PoolHourlyUsage.objects.exists()
    hourly.rollup_pending()
    assert PoolHourlyUsage.objects.get(pool=pool, hour=HOUR).reporting_gpus == 1
    assert not PendingRollup.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_import_that_fails_before_its_commit_stored_nothing_and_accepted_none(
    lead_client, pool, eager_celery
):
    # The rows are inserted first; queueing their hours, the import's last write, fails.
    with (
        _held_by_another_session("telemetry_pendingrollup"),
        pytest.raises(OperationalError, match="lock timeout"),
    ):
        _upload(lead_client, pool)

    run = ImportRun.objects.get()
    assert (run.status, run.rows_accepted, run.rows_duplicate) == (ImportRun.Status.FAILED, 0, 0)
    assert run.message.startswith("The import stopped with an error (OperationalError: ")
    assert not GpuSample.objects.exists()
    assert not PendingRollup.objects.exists()
    listed = lead_client.get(reverse("telemetry:import_list")).content.decode()
    assert "Failed" in listed
