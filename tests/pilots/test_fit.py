"""Measured beside the ceiling: each pilot's output tokens/s per GPU next to what memory
bandwidth allows at the workload's settings, on the workload page's panel, the pilot
table and the API; above the ceiling is flagged, never cut to 100 %."""

import json

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


# At the pilot's own settings. A vLLM run of 100 requests of 1,024 prompt and 256 output
# tokens, at most 16 in flight, on one GPU: 16 sequences × 1,280 tokens each step.
KV_BYTES_PER_STEP_AT_PILOT = KV_BYTES_PER_TOKEN * (1024 + 256) * 16
CEILING_AT_PILOT = 3350e9 / (WEIGHT_BYTES + KV_BYTES_PER_STEP_AT_PILOT) * 16  # ≈ 2,859.4


def _vllm_text(*, concurrency, output_tokens_per_second, requests=100):
    return json.dumps(
        {
            "backend": "vllm",
            "model_id": "meta-llama/Meta-Llama-3-8B-Instruct",
            "num_prompts": requests,
            "max_concurrency": concurrency,
            "completed": requests,
            "total_input_tokens": requests * 1024,
            "total_output_tokens": requests * 256,
            "request_throughput": 9.1,
            "output_throughput": output_tokens_per_second,
        }
    )


def _import(client, workload, text, *, gpus, source_format="vllm", **fields):
    response = client.post(
        "/api/v1/pilots/",
        {
            "workload": workload.slug,
            "gpu_model": "h100-sxm",
            "gpus": gpus,
            "format": source_format,
            "text": text,
            **fields,
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.django_db
def test_the_ceiling_holds_for_the_pilots_own_concurrency_and_lengths(client, make_user, serving):
    client.force_login(make_user("lead"))
    assert pytest.approx(2859.4, abs=0.1) == CEILING_AT_PILOT
    # 2,000 tokens/s on one GPU is above the workload's ceiling (8 × 4,096 tokens:
    # 1,316.6), not above the one at the pilot's 16 × 1,280 tokens.
    one_gpu = _import(
        client, serving, _vllm_text(concurrency=16, output_tokens_per_second=2000.0), gpus=1
    )
    assert one_gpu["input_tokens_per_request"] == 1024
    assert one_gpu["output_tokens_per_request"] == 256
    assert one_gpu["decode_ceiling_basis"] == "pilot"
    assert one_gpu["decode_ceiling_concurrent_sequences"] == 16
    assert one_gpu["decode_ceiling_context_length_tokens"] == 1280
    assert one_gpu["decode_ceiling_settings"] == "at 16 sequences × 1,280 tokens, the pilot's own"
    assert one_gpu["decode_ceiling_tokens_per_second_per_gpu"] == pytest.approx(
        CEILING_AT_PILOT, rel=1e-6
    )
    assert one_gpu["share_of_decode_ceiling_pct"] == pytest.approx(
        2000 / CEILING_AT_PILOT * 100, rel=1e-6
    )  # ≈ 69.9 %
    # 32 in flight over two GPUs: two replicas (tensor parallel 1) of 16 sequences each,
    # the same ceiling per GPU.
    two_gpus = _import(
        client, serving, _vllm_text(concurrency=32, output_tokens_per_second=3000.0), gpus=2
    )
    assert two_gpus["decode_ceiling_concurrent_sequences"] == 16
    assert two_gpus["decode_ceiling_tokens_per_second_per_gpu"] == pytest.approx(
        CEILING_AT_PILOT, rel=1e-6
    )
    assert two_gpus["share_of_decode_ceiling_pct"] == pytest.approx(
        1500 / CEILING_AT_PILOT * 100, rel=1e-6
    )

    page = client.get(reverse("pilots:workload_fit", args=[serving.slug])).content.decode()
    assert 'data-ceiling-basis="pilot">at 16 sequences × 1,280 tokens, the pilot' in page
    assert f"{2000 / CEILING_AT_PILOT * 100:.1f} %" in page
    assert 'data-above-ceiling="' not in page


@pytest.mark.django_db
def test_a_file_that_does_not_say_its_concurrency_is_held_to_the_workloads_ceiling(
    client, make_user, serving, sample
):
    """GenAI-Perf's CSV (tests/data) gives its mean lengths, 3,000.05 in and 174.45 out,
    but not its concurrency: the ceiling stays the workload's, and says why; the
    concurrency typed at import completes the pilot's own settings."""
    client.force_login(make_user("lead"))
    text = sample("genai-perf").decode()
    row = _import(client, serving, text, gpus=1, source_format="genai-perf")
    assert row["decode_ceiling_basis"] == "workload"
    assert row["decode_ceiling_settings"] == (
        "at the workload's settings (8 sequences × 4,096 tokens): the file does not say its "
        "concurrency"
    )
    assert row["decode_ceiling_tokens_per_second_per_gpu"] == pytest.approx(
        CEILING_TOKENS_PER_SECOND, rel=1e-6
    )
    typed = _import(client, serving, text + "\n", gpus=1, source_format="genai-perf", concurrency=4)
    # 4 sequences × ⌈3,000.05 + 174.45⌉ = 3,175 tokens.
    by_hand = 3350e9 / (WEIGHT_BYTES + KV_BYTES_PER_TOKEN * 3175 * 4) * 4
    assert typed["decode_ceiling_settings"] == "at 4 sequences × 3,175 tokens, the pilot's own"
    assert typed["decode_ceiling_tokens_per_second_per_gpu"] == pytest.approx(by_hand, rel=1e-6)

    # A result whose file says neither (the factory stores no lengths, no concurrency).
    bare = _pilot(serving, 658.3, "bare")
    body = client.get("/api/v1/pilots/", {"workload": serving.slug}).json()
    rows = {item["id"]: item for item in (body["results"] if isinstance(body, dict) else body)}
    assert rows[bare.pk]["decode_ceiling_settings"].endswith(
        "the file says neither its concurrency nor its input and output lengths"
    )


@pytest.mark.django_db
def test_the_demo_pilots_are_below_the_ceiling_at_their_own_settings(demo):
    """The demo's two vLLM pilots of the Asia chat API (Llama-3-70B, FP8 weights and KV
    cache, tensor parallel 4) ran 64 requests at a time of 1,024 + 256 tokens on 4 GPUs:
    one replica of 64 sequences × 1,280 tokens."""
    from apps.pilots.selectors import pilots_of
    from apps.pools.models import Workload

    workload = Workload.objects.select_related("pool__gpu_model").get(slug="chat-api-asia")
    pilots = {pilot.result.gpu_model.slug: pilot for pilot in pilots_of(workload)}
    assert pilots.keys() == {"l40s", "h100-pcie"}
    # By hand: 70,553,706,496 FP8 weights ÷ 4 GPUs; KV per token per GPU 2 × 80 layers ×
    # 2 of 8 KV heads × 128 × 1 byte = 40,960 bytes, × 1,280 tokens × 64 sequences.
    step_bytes = 70_553_706_496 // 4 + 40_960 * 1280 * 64
    for slug, bandwidth, measured in (("l40s", 864e9, 1946.47), ("h100-pcie", 2000e9, 3620.4)):
        pilot = pilots[slug]
        ceiling = bandwidth / step_bytes * 64 / 4
        assert pilot.decode_ceiling_settings.description == (
            "at 64 sequences × 1,280 tokens, the pilot's own"
        )
        assert pilot.decode_ceiling_tokens_per_second_per_gpu == pytest.approx(ceiling, rel=1e-6)
        assert pilot.share_of_decode_ceiling_pct == pytest.approx(
            measured / 4 / ceiling * 100, rel=1e-6
        )
        assert 50 < pilot.share_of_decode_ceiling_pct < 100 and not pilot.above_decode_ceiling
