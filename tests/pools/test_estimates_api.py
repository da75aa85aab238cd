"""POST /api/v1/estimates/memory/: exact bytes, named fields, papers' numbers."""

from datetime import timedelta

import pytest
from django.urls import reverse

from apps.accounts.models import ApiToken

URL = "/api/v1/estimates/memory/"


@pytest.fixture
def api(client, make_user):
    def post(payload, *, read_only=False):
        _, plaintext = ApiToken.issue(
            user=make_user("reader"),
            description="t",
            lifetime=timedelta(days=1),
            read_only=read_only,
        )
        return client.post(
            URL,
            payload,
            content_type="application/json",
            headers={"Authorization": f"Bearer {plaintext}"},
        )

    return post


@pytest.mark.django_db
def test_url_is_the_documented_one():
    assert reverse("api-estimate-memory") == URL


@pytest.mark.django_db
def test_zero_paper_worked_example_through_the_api(api):
    """ZeRO (Rajbhandari et al. 2019, §3.1 / Figure 1): Ψ = 7.5·10⁹, N_d = 64, Adam:
    120 GB of model states per GPU without ZeRO, 31.4 GB with ZeRO-1 (16Ψ vs 4Ψ + 12Ψ/64)."""
    base = {"mode": "training", "params": 7_500_000_000, "data_parallel": 64}
    for stage, expected_bytes in ((0, 120_000_000_000), (1, 31_406_250_000)):
        response = api({**base, "zero_stage": stage})
        assert response.status_code == 200, response.content
        lines = response.json()["per_gpu_bytes"]
        model_states = lines["weights"] + lines["gradients"] + lines["optimizer_states"]
        assert model_states == expected_bytes
        # Activations need the shape; the response says so instead of guessing.
        assert lines["activations"] is None
        assert any("activation" in note.lower() for note in response.json()["notes"])


@pytest.mark.django_db
def test_inference_on_a_catalog_model_and_gpu(api):
    response = api(
        {
            "mode": "inference",
            "model": "llama-3-8b",
            "gpu_model": "h100-sxm",
            "context_length": 8192,
            "concurrent_sequences": 1,
        }
    )
    assert response.status_code == 200, response.content
    body = response.json()
    lines = body["per_gpu_bytes"]
    # Llama-3-8B (Dubey et al. 2024): 8,030,261,248 parameters × 2 bytes in BF16.
    assert lines["weights"] == 8_030_261_248 * 2
    # vLLM (Kwon et al. 2023, §3): 2 × layers × kv_heads × head_dim × bytes per token
    # = 2 × 32 × 8 × 128 × 2 = 131,072 bytes; × 8,192 tokens = 1 GiB exactly.
    assert lines["kv_cache"] == 131_072 * 8192
    assert isinstance(lines["total"], int)
    assert body["gpu_memory_bytes"] == 80 * 10**9
    assert body["fits"] is True
    assert body["headroom_bytes"] == 80 * 10**9 - lines["total"]
    # Hand computation in tests/pools/test_memory.py: with the default 2 GiB + 5 %
    # overhead, 54 sequences of 8,192 tokens fit on 80·10⁹ bytes and 55 do not.
    assert body["max_concurrent_sequences"] == 54


@pytest.mark.django_db
def test_training_derives_data_parallel_from_gpus(api):
    response = api(
        {
            "mode": "training",
            "model": "llama-3-70b",
            "gpus": 64,
            "tensor_parallel": 8,
            "pipeline_parallel": 2,
            "zero_stage": 1,
            "gpu_model": "h100-sxm",
            "sequence_parallel": True,
            "recompute": "selective",
            "seq_len": 8192,
        }
    )
    assert response.status_code == 200, response.content
    assert response.json()["settings"]["data_parallel"] == 4
    assert response.json()["fits"] is True


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"mode": "training"}, "params"),
        ({"mode": "training", "model": "no-such-model"}, "model"),
        ({"mode": "training", "model": "llama-3-8b", "gpu_model": "nope"}, "gpu_model"),
        ({"mode": "training", "model": "llama-3-8b", "tensor_parallel": 3}, "tensor_parallel"),
        ({"mode": "training", "params": 10**9, "zero_stage": 4}, "zero_stage"),
        ({"mode": "inference", "params": 10**9, "weight_precision": "int3"}, "weight_precision"),
        ({"mode": "training", "model": "llama-3-8b", "gpus": 12, "tensor_parallel": 8}, "gpus"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, payload, field):
    response = api(payload)
    assert response.status_code == 400
    assert field in response.json(), response.json()


@pytest.mark.django_db
def test_read_only_tokens_may_estimate_and_anonymous_may_not(api, client):
    assert api({"mode": "training", "params": 10**9}, read_only=True).status_code == 200
    assert client.post(URL, {"params": 10**9}, content_type="application/json").status_code in (
        401,
        403,
    )
