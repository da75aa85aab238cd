"""The push endpoints take what their schema allows (MAX_TEXT_CHARACTERS of text), and an
oversized body is refused with 413 and a JSON reason, not an HTML 400."""

import json

import pytest

from apps.telemetry.api import MAX_BODY_BYTES, MAX_TEXT_CHARACTERS
from apps.telemetry.models import GpuSample
from tests.telemetry.test_api import bearer  # noqa: F401 - the fixture

COLUMNS = {"timestamp": "t", "device": "g", "utilization_pct": "u"}


def _csv_of_at_least(size_bytes: int) -> tuple[str, int]:
    lines, rows, length = ["t,g,u"], 0, 6
    while length < size_bytes:
        minute, second = divmod(rows // 8, 60)
        stamp = f"2026-11-01T{10 + minute // 60:02d}:{minute % 60:02d}:{second:02d}Z"
        line = f"{stamp},GPU-{rows % 8:036d},{rows % 100}"
        lines.append(line)
        length += len(line) + 1
        rows += 1
    return "\n".join(lines) + "\n", rows


@pytest.mark.django_db
def test_a_3_mb_push_is_accepted(client, bearer, pool):  # noqa: F811
    text, rows = _csv_of_at_least(3_000_000)
    payload = {"format": "csv", "pool": pool.slug, "text": text, "columns": COLUMNS}
    response = client.post(
        "/api/v1/telemetry/gpu/", payload, content_type="application/json", headers=bearer("ops")
    )
    assert response.status_code == 201, response.content[:500]
    assert response.json()["accepted"] == rows == GpuSample.objects.count()


@pytest.mark.django_db
def test_an_oversized_push_is_a_413_with_a_json_reason(client, bearer, pool):  # noqa: F811
    payload = json.dumps({"format": "csv", "text": "x" * (MAX_BODY_BYTES + 1), "columns": COLUMNS})
    response = client.post(
        "/api/v1/telemetry/gpu/", payload, content_type="application/json", headers=bearer("ops")
    )
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert "too large" in response.json()["detail"]
    assert f"{MAX_TEXT_CHARACTERS:,} characters" in response.json()["detail"]
    assert not GpuSample.objects.exists()
