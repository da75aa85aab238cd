"""An export whose worker stopped is marked interrupted with a sentence and written again
by the retry; out of attempts, the page says what to do and stops polling."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.core.runs import reap_stalled_runs
from apps.procurement.models import ComparisonExport

REAPER = "apps.procurement.exports.jobs.reap_stalled_exports"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def _stalled_export(scenario, attempts=1) -> ComparisonExport:
    export = ComparisonExport.objects.create(
        scenario=scenario, format="csv", status="running", progress_pct=40, attempts=attempts
    )
    long_ago = timezone.now() - timedelta(minutes=10)
    ComparisonExport.objects.filter(pk=export.pk).update(heartbeat_at=long_ago)
    return export


@pytest.mark.django_db
def test_a_stalled_export_is_interrupted_and_written_by_the_retry(
    scenario, eager_celery, django_capture_on_commit_callbacks
):
    export = _stalled_export(scenario)
    with django_capture_on_commit_callbacks(execute=True):
        assert reap_stalled_runs()[REAPER] == 1
    export.refresh_from_db()
    assert export.status == ComparisonExport.Status.SUCCEEDED, export.message
    assert export.attempts == 2 and export.file


@pytest.mark.django_db
def test_an_export_out_of_attempts_says_what_to_do(client, make_user, scenario, settings):
    settings.RUN_MAX_ATTEMPTS = 1
    export = _stalled_export(scenario)
    reap_stalled_runs()
    export.refresh_from_db()
    assert export.status == ComparisonExport.Status.INTERRUPTED
    assert export.message.startswith("The worker stopped while writing the export (last heard ")
    assert export.message.endswith("); ask for the export again.")
    client.force_login(make_user("reader"))
    fragment = client.get(
        reverse("procurement:export_detail", args=[export.pk]),
        headers={"HX-Request": "true", "HX-Target": "export-progress"},
    ).content.decode()
    assert "Interrupted" in fragment and export.message in fragment
    assert "hx-trigger" not in fragment
