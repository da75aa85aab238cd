"""Telemetry through the API: agents push, scripts read the hourly rows."""

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.accounts.models import ApiToken
from apps.pools.models import Workload, WorkloadKind
from apps.telemetry.models import GpuSample, ImportRun, PoolHourlyUsage

DATA = Path(__file__).resolve().parent.parent / "data"
SCRAPE = DATA / "dcgm-exporter" / "scrapes" / "aicr_8xH100_k8s_podlabels_driver580_sampled.prom"


@pytest.fixture
def bearer(make_user):
    def headers(role, *, read_only=False):
        _, plaintext = ApiToken.issue(
            user=make_user(role),
            description="agent",
            lifetime=timedelta(days=1),
            read_only=read_only,
        )
        return {"Authorization": f"Bearer {plaintext}"}

    return headers


@pytest.mark.django_db
def test_agent_pushes_a_scrape_once(client, bearer, pool):
    payload = {
        "format": "dcgm",
        "pool": pool.slug,
        "text": SCRAPE.read_text(),
        "scraped_at": "2026-11-01T10:15:00Z",
    }
    headers = bearer("ops")
    first = client.post(
        "/api/v1/telemetry/gpu/", payload, content_type="application/json", headers=headers
    )
    assert first.status_code == 201, first.content
    # The aicr scrape samples 8 H100s (Hostname label, pod labels).
    assert first.json()["accepted"] == 8 == GpuSample.objects.count()
    # The same text again is refused before anything is read or recorded: 409, naming
    # the earlier import.
    again = client.post(
        "/api/v1/telemetry/gpu/", payload, content_type="application/json", headers=headers
    )
    earlier = ImportRun.objects.get(source="api")
    assert again.status_code == 409, again.content
    assert again.json()["import_run"] == earlier.pk
    assert again.json()["url"] == f"http://testserver/telemetry/imports/{earlier.pk}/"
    assert f"as import #{earlier.pk}: nothing added." in again.json()["detail"]
    assert GpuSample.objects.count() == 8
    assert ImportRun.objects.filter(source="api").count() == 1
    assert earlier.content_sha256 == hashlib.sha256(SCRAPE.read_bytes()).hexdigest()
    assert earlier.scraped_at == datetime(2026, 11, 1, 10, 15, tzinfo=UTC)


@pytest.mark.django_db
def test_bad_rows_are_a_422_and_store_nothing(client, bearer, pool):
    text = "t,g,u\n2026-11-01T10:00:00Z,GPU-a,50\n2026-11-01T10:01:00Z,GPU-a,101\n"
    payload = {
        "format": "csv",
        "pool": pool.slug,
        "text": text,
        "columns": {"timestamp": "t", "device": "g", "utilization_pct": "u"},
    }
    response = client.post(
        "/api/v1/telemetry/gpu/", payload, content_type="application/json", headers=bearer("lead")
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["line"] == 3
    assert "101" in response.json()["errors"][0]["message"]
    assert not GpuSample.objects.exists()
    kept = client.post(
        "/api/v1/telemetry/gpu/",
        {**payload, "skip_bad_rows": True},
        content_type="application/json",
        headers=bearer("lead"),
    )
    assert kept.status_code == 201 and kept.json()["accepted"] == 1


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "read_only"), [("procurement", False), ("lead", True)])
def test_who_may_push(client, bearer, pool, role, read_only):
    response = client.post(
        "/api/v1/telemetry/gpu/",
        {"format": "dcgm", "text": SCRAPE.read_text()},
        content_type="application/json",
        headers=bearer(role, read_only=read_only),
    )
    assert response.status_code == 403
    assert not GpuSample.objects.exists()


@pytest.mark.django_db
def test_hourly_usage_rows_with_iso_utc_hours_and_a_range(client, bearer, pool, tmp_path):
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    path = tmp_path / "s.csv"
    path.write_text(
        "t,g,u\n"
        + "".join(
            f"{(ten + timedelta(hours=offset)).isoformat()},GPU-a,{10 * (offset + 1)}\n"
            for offset in range(3)
        )
    )
    call_command(
        "import_telemetry",
        str(path),
        "--format",
        "csv",
        "--pool",
        pool.slug,
        "--columns",
        "timestamp=t,device=g,utilization_pct=u",
        stdout=None,
    )
    call_command("rollup_usage", "--all")
    assert PoolHourlyUsage.objects.count() == 3
    response = client.get(
        "/api/v1/usage/hourly/",
        {"pool": pool.slug, "start": "2026-11-01T11:00:00Z", "end": "2026-11-01T13:00:00Z"},
        headers=bearer("procurement", read_only=True),
    )
    assert response.status_code == 200
    rows = response.json()
    assert [row["hour"] for row in rows] == ["2026-11-01T11:00:00Z", "2026-11-01T12:00:00Z"]
    assert [row["busy_gpu_hours"] for row in rows] == [pytest.approx(0.2), pytest.approx(0.3)]
    assert rows[0]["capacity_gpu_hours"] == pool.gpu_count
    missing = client.get("/api/v1/usage/hourly/", headers=bearer("lead"))
    assert missing.status_code == 400 and "pool" in missing.json()


@pytest.mark.django_db
def test_requests_push_and_hourly_read(client, bearer, pool, architecture):
    workload = Workload.objects.create(
        name="Chat",
        slug="chat",
        kind=WorkloadKind.ONLINE_INFERENCE,
        model_architecture=architecture,
        pool=pool,
        gpu_count=1,
    )
    text = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n" + "\r\n".join(
        f"2023-11-16 18:{minute:02d}:00.0000000,{100 * minute},{minute}" for minute in range(1, 6)
    )
    response = client.post(
        "/api/v1/telemetry/requests/",
        {"format": "azure-llm", "workload": workload.slug, "text": text},
        content_type="application/json",
        headers=bearer("ops"),
    )
    assert response.status_code == 201, response.content
    assert response.json()["accepted"] == 5
    call_command("rollup_usage", "--all")
    rows = client.get(
        "/api/v1/usage/requests/hourly/", {"workload": "chat"}, headers=bearer("reader")
    ).json()
    assert rows == [
        {
            "hour": "2023-11-16T18:00:00Z",
            "requests": 5,
            "input_tokens": 1500,
            "output_tokens": 15,
            "errors": 0,
            "p95_latency_ms": None,
        }
    ]
