"""When an estimate does not fit, the calculator and the API list what would, one change
each. The example is the one a lead met: Llama-3-70B served on 2 × H100 SXM (80 GB) with
8 sequences of 8,192 tokens, 87.5 GB per GPU.

Hand computation (inference formulas of apps/pools/memory.py, FORMULAS.md; Llama-3-70B:
Ψ = 70,553,706,496 parameters, 80 layers, 8 KV heads of 128 dimensions; overhead =
2 GiB + ⌈5 % × (weights + KV cache)⌉):
- BF16, TP 2: weights 70,553,706,496 B; KV = 2 × 80 × 8 × 128 × 2 B ÷ 2 = 163,840 B a
  token × 8,192 × 8 = 10,737,418,240 B; overhead 2,147,483,648 + 4,064,556,237; total
  87,503,164,621 B.
- FP8 weights: 35,276,853,248 + 10,737,418,240 + 2,147,483,648 + 2,300,713,575 =
  50,462,468,711 B.
- TP 4 (BF16): 35,276,853,248 + 5,368,709,120 + 2,147,483,648 + 2,032,278,119 =
  44,825,324,135 B, on 4 GPUs.
- 2 sequences: 70,553,706,496 + 2,684,354,560 + 2,147,483,648 + 3,661,903,053 =
  79,047,447,757 B ≤ 80·10⁹; 3 sequences would be 80,456,733,901 B > 80·10⁹.
"""

from datetime import timedelta

import pytest
from django.urls import reverse

from apps.accounts.models import ApiToken
from apps.catalog.models import GpuModel
from apps.pools.forms import CalculatorForm
from apps.pools.proposals import QUANTISATION_WARNING

REQUEST = {
    "mode": "inference",
    "model": "llama-3-70b",
    "gpu_model": "h100-sxm",
    "tensor_parallel": 2,
    "context_length": 8192,
    "concurrent_sequences": 8,
}


@pytest.fixture
def api(client, make_user):
    _, plaintext = ApiToken.issue(
        user=make_user("reader"), description="t", lifetime=timedelta(days=1), read_only=False
    )

    def post(payload):
        return client.post(
            "/api/v1/estimates/memory/",
            payload,
            content_type="application/json",
            headers={"Authorization": f"Bearer {plaintext}"},
        )

    return post


@pytest.mark.django_db
def test_the_api_proposes_what_would_fit(api, catalog):
    body = api(REQUEST).json()
    assert body["per_gpu_bytes"]["total"] == 87_503_164_621 and body["fits"] is False
    proposals = {proposal["change"]: proposal for proposal in body["proposals"]}
    h100 = GpuModel.objects.get(slug="h100-sxm")
    price = float(h100.reference_price_per_gpu_hour_usd)

    fp8 = proposals["FP8 weights"]
    assert (fp8["per_gpu_bytes"], fp8["gpus"]) == (50_462_468_711, 2)
    assert fp8["warning"] == QUANTISATION_WARNING
    assert fp8["price_per_hour_usd"] == pytest.approx(2 * price)
    assert "INT4 weights" not in proposals  # FP8 already fits: the smaller step is enough

    tensor = proposals["Tensor parallel 4"]
    assert (tensor["per_gpu_bytes"], tensor["gpus"]) == (44_825_324_135, 4)
    assert tensor["price_per_hour_usd"] == pytest.approx(4 * price)

    fewer = proposals["2 concurrent sequences"]
    assert fewer["per_gpu_bytes"] == 79_047_447_757
    assert fewer["headroom_bytes"] == 80_000_000_000 - 79_047_447_757

    # Larger GPUs keep every setting: the same 87.5 GB, on more memory.
    larger = [p for p in body["proposals"] if p["gpu_name"] != h100.name]
    assert larger and all(p["per_gpu_bytes"] == 87_503_164_621 for p in larger)
    assert all(p["gpu_memory_bytes"] > 80_000_000_000 for p in larger)


@pytest.mark.django_db
def test_an_estimate_that_fits_proposes_nothing(api, catalog):
    body = api({**REQUEST, "concurrent_sequences": 1, "weight_precision": "fp8"}).json()
    assert body["fits"] is True and body["proposals"] == []


@pytest.mark.django_db
def test_the_calculator_page_lists_the_proposals(client, make_user, catalog):
    client.force_login(make_user("lead"))
    # Every field of the form, as the page submits it: the defaults, then the example.
    query = CalculatorForm.with_defaults(REQUEST).data
    page = client.get(reverse("pools:calculator"), query).content.decode()
    assert 'id="calculator-proposals"' in page and "What would fit" in page
    assert 'data-change="FP8 weights"' in page and "50.5 GB" in page
    assert QUANTISATION_WARNING.replace("'", "&#x27;") in page
