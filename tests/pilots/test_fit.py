"""Measured beside the ceiling: each pilot's output tokens/s per GPU next to what memory
bandwidth allows at the workload's settings, on the workload page's panel, the pilot
table and the API; above the ceiling is flagged, never cut to 100 %."""

import pytest
from django.urls import reverse

from tests.factories import PilotResultFactory, WorkloadFactory, seeded_architecture

# Llama-3-8B (Hugging Face config.json: 32 layers, 8 KV heads of 128; 8,030,261,248
# parameters) served in BF16 on one H100 SXM (3,350 GB/s) at the workload's defaults:
# 8 sequences × 4,096 tokens. Each decode step reads the weights and every sequence's KV
# cache once (Kwon et al. 2023; FORMULAS.md, "Compute and throughput"):
WEIGHT_BYTES = 8_030_261_248 * 2
KV_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # K and V × layers × KV heads × head dim × 2 bytes
KV_BYTES_PER_STEP = KV_BYTES_PER_TOKEN * 4096 * 8
CEILING_TOKENS_PER_SECOND = 3350e9 / (WEIGHT_BYTES + KV_BYTES_PER_STEP) * 8  # ≈ 1,316.6


@pytest.fixture
def serving(pool):
    return WorkloadFactory(
        name="Chat 8B",
        slug="chat-8b",
        pool=pool,
        kind="online_inference",
        model_architecture=seeded_architecture("llama-3-8b"),
        gpu_count=1,
        data_parallel=1,
    )


def _pilot(workload, tokens_per_second, name, gpus=1):
    return PilotResultFactory(
        workload=workload, name=name, gpu_count=gpus, output_tokens_per_second=tokens_per_second
    )


@pytest.mark.django_db
def test_the_api_gives_the_ceiling_and_the_measured_share(client, make_user, serving):
    half = _pilot(serving, CEILING_TOKENS_PER_SECOND, "two GPUs at half", gpus=2)
    client.force_login(make_user("lead"))
    body = client.get("/api/v1/pilots/", {"workload": serving.slug}).json()
    (row,) = body["results"] if isinstance(body, dict) else body
    assert row["id"] == half.pk
    assert row["decode_ceiling_tokens_per_second_per_gpu"] == pytest.approx(
        CEILING_TOKENS_PER_SECOND, rel=1e-3
    )
    # The run's tokens/s over 2 GPUs is half the one-GPU ceiling.
    assert row["share_of_decode_ceiling_pct"] == pytest.approx(50.0, rel=1e-3)


@pytest.mark.django_db
def test_the_panel_puts_measured_beside_the_ceiling_and_flags_what_exceeds_it(
    client, make_user, serving
):
    inside = _pilot(serving, 658.3, "inside")
    above = _pilot(serving, 2000.0, "above")
    client.force_login(make_user("reader"))
    workload_page = client.get(serving.get_absolute_url()).content.decode()
    panel_url = reverse("pilots:workload_fit", args=[serving.slug])
    assert f'hx-get="{panel_url}"' in workload_page
    page = client.get(panel_url, headers={"HX-Request": "true"}).content.decode()
    assert 'id="workload-fit-panel"' in page and "<html" not in page
    # 658.3 ÷ 1,316.6 ≈ 50.0 %; 2,000 ÷ 1,316.6 ≈ 151.9 %, shown as it is and flagged.
    assert f"{658.3 / CEILING_TOKENS_PER_SECOND * 100:.1f} %" in page
    assert f"{2000 / CEILING_TOKENS_PER_SECOND * 100:.1f} %" in page
    assert f'data-above-ceiling="{above.pk}"' in page
    assert f'data-above-ceiling="{inside.pk}"' not in page
    assert "1,316.6" in page or "1,316.5" in page


@pytest.mark.django_db
def test_the_pilot_table_has_the_share_of_the_ceiling(client, make_user, serving):
    pilot = _pilot(serving, 658.3, "inside")
    client.force_login(make_user("reader"))
    page = client.get(reverse("pilots:pilot_list", args=[serving.slug])).content.decode()
    assert f'data-share-of-ceiling="{pilot.pk}">50.0 %' in page


@pytest.mark.django_db
def test_without_pilots_the_panel_says_how_to_add_one(client, make_user, serving):
    client.force_login(make_user("reader"))
    page = client.get(reverse("pilots:workload_fit", args=[serving.slug])).content.decode()
    assert "No pilot yet" in page
    assert reverse("pilots:pilot_list", args=[serving.slug]) in page
    assert f"{CEILING_TOKENS_PER_SECOND:,.0f} tokens/s per GPU" in page


@pytest.mark.django_db
def test_a_training_workload_has_no_ceiling_and_no_panel(client, make_user, workload):
    _pilot(workload, 1000.0, "odd")
    client.force_login(make_user("reader"))
    assert reverse("pilots:workload_fit", args=[workload.slug]) not in (
        client.get(workload.get_absolute_url()).content.decode()
    )
    body = client.get("/api/v1/pilots/", {"workload": workload.slug}).json()
    rows = body["results"] if isinstance(body, dict) else body
    assert rows[0]["decode_ceiling_tokens_per_second_per_gpu"] is None
    assert rows[0]["share_of_decode_ceiling_pct"] is None
