"""Importing training event logs: line-numbered errors, all-or-nothing, idempotent, in
scope; the push API, the command, the goodput API and the workload page's panel."""

import json
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.training.models import TrainingEvent, TrainingImportRun
from tests.factories import TeamFactory, UserFactory

DATA = Path(__file__).resolve().parents[1] / "data" / "goodput-measure"
PRIMER = (DATA / "primer_worked_example.jsonl").read_text()
FSDP = (DATA / "fsdp_example_event_log.jsonl").read_text()
PUSH = reverse("api-ingest-training-events")

pytestmark = pytest.mark.django_db


@pytest.fixture
def timed_workload(workload):
    """The walk's workload at the primer's ideal speed: 2 minutes a step."""
    workload.reference_step_seconds = Decimal("120")
    workload.save(update_fields=["reference_step_seconds"])
    return workload


def _push(client, workload, text=PRIMER, **extra):
    return client.post(
        PUSH,
        data=json.dumps({"workload": workload.slug, "text": text, **extra}),
        content_type="application/json",
    )


def test_push_stores_every_event_once_and_a_second_push_adds_nothing(client, timed_workload):
    client.force_login(UserFactory(role="ops"))
    first = _push(client, timed_workload)
    assert first.status_code == 201, first.json()
    assert first.json()["accepted"] == 8 and first.json()["duplicates"] == 0
    again = _push(client, timed_workload)
    assert again.status_code == 201
    assert again.json()["accepted"] == 0 and again.json()["duplicates"] == 8
    assert TrainingEvent.objects.filter(workload=timed_workload).count() == 8


def test_a_bad_line_stores_nothing_and_is_named(client, timed_workload):
    client.force_login(UserFactory(role="lead"))
    text = PRIMER + '{"job_name": "x", "event_type": "job_paused", "timestamp": "2025-01-02"}\n'
    response = _push(client, timed_workload, text=text)
    assert response.status_code == 422
    body = response.json()
    assert body["status"] == "failed" and body["accepted"] == 0
    assert body["errors"][0]["line"] == 9
    assert "event_type 'job_paused' is not one of" in body["errors"][0]["message"]
    assert "the first on line 9" in body["message"]
    assert not TrainingEvent.objects.exists()
    assert TrainingImportRun.objects.get().status == "failed"


def test_csv_push_through_a_column_mapping(client, timed_workload):
    client.force_login(UserFactory(role="ops"))
    text = "when,job,what,ckpt\n2025-01-01T00:00:00Z,j,job_started,\n"
    text += "2025-01-01T00:01:00Z,j,checkpoint_loaded,0\n"
    text += "2025-01-01T00:10:00Z,j,checkpoint_saved,3\n"
    response = _push(
        client,
        timed_workload,
        text=text,
        format="csv",
        columns={"timestamp": "when", "job_name": "job", "event_type": "what", "step": "ckpt"},
    )
    assert response.status_code == 201, response.json()
    assert response.json()["accepted"] == 3


def test_push_refuses_readers_and_out_of_scope_workloads(client, timed_workload):
    client.force_login(UserFactory(role="reader"))
    assert _push(client, timed_workload).status_code == 403
    team_a, team_b = TeamFactory(name="A"), TeamFactory(name="B")
    timed_workload.pool.team = team_a
    timed_workload.pool.save(update_fields=["team"])
    client.force_login(UserFactory(role="ops", teams=[team_b]))
    refused = _push(client, timed_workload)
    assert refused.status_code == 400
    assert "workload" in refused.json()
    client.force_login(UserFactory(role="ops", teams=[team_a]))
    assert _push(client, timed_workload).status_code == 201
    assert client.post(PUSH, data="{}", content_type="application/json").status_code == 400


def test_goodput_api_reproduces_the_primer_with_hours_gpu_hours_and_dollars(client, timed_workload):
    client.force_login(UserFactory(role="ops"))
    _push(client, timed_workload)
    client.force_login(UserFactory(role="reader"))
    url = reverse("workload-goodput", kwargs={"slug": timed_workload.slug})
    body = client.get(url).json()
    assert body["total_seconds"] == 12000
    assert body["effective_seconds"] == 6000
    assert body["goodput_pct"] == 50.0
    assert body["badput_seconds"] == {
        "checkpoint_loading": 600,
        "progress_lost": 2400,
        "restart": 900,
        "checkpoint_saving": 600,
        "slowdown": 1500,
    }
    # 200 minutes on the workload's 8 GPUs at the pool's $2.99 per GPU-hour.
    assert body["gpu_count"] == 8
    assert body["gpu_hours"] == pytest.approx(200 / 60 * 8, abs=1e-5)
    assert body["usd"] == pytest.approx(200 / 60 * 8 * 2.99, abs=1e-3)
    assert body["badput"]["progress_lost"]["usd"] == pytest.approx(40 / 60 * 8 * 2.99, abs=1e-3)
    assert [job["job_name"] for job in body["jobs"]] == ["primer-worked-example"]
    assert body["flags"] == []
    # A period holding only the second run: 115 → 200 min.
    second = client.get(url, {"start": "2025-01-01T01:55:00Z", "end": "2025-01-02T00:00:00Z"})
    assert second.json()["total_seconds"] == 85 * 60


def test_goodput_api_flags_a_missing_reference_step(client, workload):
    client.force_login(UserFactory(role="ops"))
    _push(client, workload)
    body = client.get(reverse("workload-goodput", kwargs={"slug": workload.slug})).json()
    assert body["effective_seconds"] == 0 and "no_reference_step" in body["flags"]


def test_command_imports_and_re_imports_nothing(timed_workload):
    out = StringIO()
    path = DATA / "fsdp_example_event_log.jsonl"
    call_command("import_training_events", str(path), workload=timed_workload.slug, stdout=out)
    assert "26 event(s) stored, 0 already stored." in out.getvalue()
    out = StringIO()
    call_command("import_training_events", str(path), workload=timed_workload.slug, stdout=out)
    assert "0 event(s) stored, 26 already stored." in out.getvalue()
    assert TrainingImportRun.objects.filter(source="command").count() == 2


def test_command_names_the_bad_line(tmp_path, timed_workload):
    path = tmp_path / "bad.jsonl"
    path.write_text(PRIMER + "{broken\n")
    with pytest.raises(CommandError, match="line 9: not a JSON object"):
        call_command("import_training_events", str(path), workload=timed_workload.slug)
    assert not TrainingEvent.objects.exists()
    with pytest.raises(CommandError, match="No workload"):
        call_command("import_training_events", str(path), workload="nope")


def test_panel_shows_the_empty_state_then_the_table(client, timed_workload):
    client.force_login(UserFactory(role="ops"))
    url = reverse("training:workload_panel", kwargs={"slug": timed_workload.slug})
    empty = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "No training events yet" in empty and "import_training_events" in empty
    upload = client.post(
        reverse("training:event_import", kwargs={"slug": timed_workload.slug}),
        {"format": "jsonl", "file": SimpleUploadedFile("primer.jsonl", PRIMER.encode())},
        headers={"HX-Request": "true"},
    )
    assert upload.status_code == 200
    body = upload.content.decode()
    assert "8 event(s) stored" in body
    assert 'id="goodput-table"' in body and "50.0 %" in body
    assert "3.33 h" in body  # the total: 200 minutes


def test_upload_errors_are_listed_by_line(client, timed_workload):
    client.force_login(UserFactory(role="lead"))
    response = client.post(
        reverse("training:event_import", kwargs={"slug": timed_workload.slug}),
        {"format": "jsonl", "file": SimpleUploadedFile("bad.jsonl", b'{"job_name": "j"}\n')},
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert "Line 1: event_type" in body and "Nothing was imported" in body
    csv_without_mapping = client.post(
        reverse("training:event_import", kwargs={"slug": timed_workload.slug}),
        {"format": "csv", "file": SimpleUploadedFile("e.csv", b"a\n")},
        headers={"HX-Request": "true"},
    )
    # htmx swaps only a 2xx answer: the panel comes back with the field's error.
    assert csv_without_mapping.status_code == 200
    body = csv_without_mapping.content.decode()
    assert "A CSV needs its column mapping." in body and "<html" not in body
    assert not TrainingEvent.objects.exists()


def test_workload_page_loads_the_panel_for_training_workloads(client, timed_workload):
    client.force_login(UserFactory(role="reader"))
    page = client.get(timed_workload.get_absolute_url()).content.decode()
    assert reverse("training:workload_panel", kwargs={"slug": timed_workload.slug}) in page


def test_reference_step_is_editable_in_the_workload_api(client, workload):
    client.force_login(UserFactory(role="lead"))
    url = reverse("workload-detail", kwargs={"slug": workload.slug})
    response = client.patch(
        url,
        data=json.dumps({"reference_step_seconds": "0.002569"}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.json()
    workload.refresh_from_db()
    assert workload.reference_step_seconds == Decimal("0.002569")
    refused = client.patch(
        url, data=json.dumps({"reference_step_seconds": "0"}), content_type="application/json"
    )
    assert refused.status_code == 400


def test_the_identity_key_holds_events_without_step_or_node_rank(timed_workload):
    from datetime import UTC, datetime

    from django.db import IntegrityError, transaction

    values = {
        "workload": timed_workload,
        "job_name": "j",
        "event_type": "job_started",
        "timestamp": datetime(2025, 1, 1, tzinfo=UTC),
    }
    TrainingEvent.objects.create(**values)
    with pytest.raises(IntegrityError), transaction.atomic():
        TrainingEvent.objects.create(**values)  # NULL step and node rank count as equal


def test_the_documented_fsdp_log_through_the_command_and_the_api(client, timed_workload):
    """examples/goodput_measurement/README.md: 21.72 % at a 0.002569 s reference step."""
    timed_workload.reference_step_seconds = Decimal("0.002569")
    timed_workload.save(update_fields=["reference_step_seconds"])
    call_command(
        "import_training_events",
        str(DATA / "fsdp_example_event_log.jsonl"),
        workload=timed_workload.slug,
        stdout=StringIO(),
    )
    client.force_login(UserFactory(role="reader"))
    body = client.get(reverse("workload-goodput", kwargs={"slug": timed_workload.slug})).json()
    assert f"{body['goodput_pct']:.2f}" == "21.72"
    assert (body["jobs"][0]["min_loaded_step"], body["jobs"][0]["max_saved_step"]) == (0, 10000)
    assert body["event_count"] == 26


def test_the_panel_reads_in_a_fixed_number_of_queries(
    client, timed_workload, django_assert_max_num_queries
):
    from datetime import UTC, datetime, timedelta

    origin = datetime(2025, 1, 1, tzinfo=UTC)
    TrainingEvent.objects.bulk_create(
        TrainingEvent(
            workload=timed_workload,
            job_name=f"job-{job}",
            event_type=event_type,
            timestamp=origin + timedelta(hours=job, minutes=minute),
            step=step,
        )
        for job in range(30)
        for minute, event_type, step in (
            (0, "job_started", None),
            (1, "checkpoint_loaded", 0),
            (50, "checkpoint_saved", 20),
            (55, "job_terminated", None),
        )
    )
    client.force_login(UserFactory(role="reader"))
    url = reverse("training:workload_panel", kwargs={"slug": timed_workload.slug})
    with django_assert_max_num_queries(12):
        response = client.get(url, headers={"HX-Request": "true"})
    assert response.content.decode().count("job-") >= 30
