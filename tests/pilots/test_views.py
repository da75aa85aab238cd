"""The pilot page compares GPU models by measured cost per 10⁶ output tokens, each at the
price the page names; its form imports a file or refuses it naming the line or key."""

from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.catalog.models import GpuModel
from apps.pilots.models import PilotResult
from apps.pilots.selectors import pilots_of
from apps.pilots.services import import_benchmark
from tests.factories import UserFactory, seeded_gpu_model


@pytest.fixture
def pilots(workload, sample):
    """Three options: vLLM on 4 of the pool's own H100 SXM, GenAI-Perf on 1 A100 SXM 80GB
    (catalog reference price $1.79), MLPerf on 8 MI300X (no reference price)."""
    imports = [
        ("vllm", "h100-sxm", 4),
        ("genai-perf", "a100-sxm-80gb", 1),
        ("mlperf", "mi300x", 8),
    ]
    for source_format, gpu_slug, gpu_count in imports:
        import_benchmark(
            workload=workload,
            gpu_model=seeded_gpu_model(gpu_slug),
            gpu_count=gpu_count,
            source_format=source_format,
            content=sample(source_format),
            filename=f"{source_format}.txt",
            name=f"{source_format} run",
        )
    return {row.result.source_format: row for row in pilots_of(workload)}


@pytest.mark.django_db
def test_costs_match_a_hand_computation(workload, pilots):
    assert workload.pool.gpu_model.slug == "h100-sxm"
    assert workload.pool.effective_price_per_gpu_hour_usd == Decimal("2.9900")
    own = pilots["vllm"]
    assert (own.price_per_gpu_hour_usd, own.price_source) == (2.99, "pool")
    # $2.99 × 4 GPUs ÷ (11011.349280220396 tokens/s × 3600 s) × 10⁶
    # = 11.96 ÷ 39,640,857.408793 × 10⁶ = $0.3017089 per 10⁶ output tokens
    assert own.cost_per_million_output_tokens_usd == pytest.approx(0.30170891302030584)
    other = pilots["genai-perf"]
    assert (other.price_per_gpu_hour_usd, other.price_source) == (1.79, "catalog")
    # $1.79 × 1 GPU ÷ (261.25 tokens/s × 3600 s) × 10⁶ = 1.79 ÷ 940,500 × 10⁶ = $1.903243
    assert other.cost_per_million_output_tokens_usd == pytest.approx(1.903242955874535)
    unpriced = pilots["mlperf"]
    assert (unpriced.price_per_gpu_hour_usd, unpriced.price_source) == (None, "none")
    assert unpriced.cost_per_million_output_tokens_usd is None


@pytest.mark.django_db
def test_the_page_shows_figures_with_units_and_which_price(client, workload, pilots):
    client.force_login(UserFactory(role="reader"))
    body = client.get(reverse("pilots:pilot_list", kwargs={"slug": workload.slug})).content
    page = body.decode()
    assert "$0.3017" in page and "$1.9032" in page
    assert "per 1M output tokens" in page
    assert "11,011.3 tokens/s" in page
    assert "2,752.8 tokens/s/GPU" in page  # 11011.35 ÷ 4
    assert "effective price" in page and "catalog reference price" in page
    assert "no price" in page
    assert "price per GPU-hour (USD) × GPUs ÷ (output tokens/s × 3600 s/h) × 10⁶" in page
    # Cheapest first; the option without a price last.
    assert page.index("vllm run") < page.index("genai-perf run") < page.index("mlperf run")


@pytest.mark.django_db
def test_the_table_sorts_and_its_fragment_comes_alone(client, workload, pilots):
    client.force_login(UserFactory(role="reader"))
    url = reverse("pilots:pilot_list", kwargs={"slug": workload.slug})
    fragment = client.get(
        url, {"sort": "-throughput"}, headers={"HX-Request": "true", "HX-Target": "pilot-table"}
    ).content.decode()
    assert fragment.lstrip().startswith('<div id="pilot-table">')
    assert (
        fragment.index("mlperf run") < fragment.index("vllm run") < fragment.index("genai-perf run")
    )


@pytest.mark.django_db
def test_the_empty_page_says_how_to_import(client, workload):
    client.force_login(UserFactory(role="reader"))
    page = client.get(reverse("pilots:pilot_list", kwargs={"slug": workload.slug})).content
    page = page.decode()
    assert "No pilot benchmarks yet" in page
    assert "manage.py import_benchmark FILE --format mlperf|vllm|genai-perf|guidellm " in page
    assert 'id="pilot-upload"' not in page  # a reader cannot import


def _upload(client, workload, content, **fields):
    data = {
        "file": SimpleUploadedFile(fields.pop("filename", "result.json"), content),
        "source_format": "vllm",
        "gpu_model": "l40s",
        "gpu_count": "4",
        **fields,
    }
    return client.post(reverse("pilots:pilot_list", kwargs={"slug": workload.slug}), data)


@pytest.mark.django_db
def test_the_form_imports_once_and_refuses_a_bad_file(client, workload, sample):
    client.force_login(UserFactory(role="ops"))
    response = _upload(client, workload, sample("vllm"), name="kvcache")
    assert response.status_code == 302
    assert PilotResult.objects.get().name == "kvcache"
    again = _upload(client, workload, sample("vllm"), name="renamed")
    assert again.status_code == 302
    assert PilotResult.objects.get().name == "kvcache"

    refused = _upload(client, workload, b'{"output_throughput": "fast"}')
    assert refused.status_code == 400
    assert "key “output_throughput” is &quot;fast&quot;: expected a number." in (
        refused.content.decode()
    )
    assert PilotResult.objects.count() == 1


@pytest.mark.django_db
def test_posting_needs_the_permission(client, workload, sample):
    client.force_login(UserFactory(role="procurement"))
    assert _upload(client, workload, sample("vllm")).status_code == 403
    assert not PilotResult.objects.exists()


@pytest.mark.django_db
def test_another_teams_workload_is_404_and_refused(client, workload, sample):
    from tests.factories import TeamFactory

    team_a, team_b = TeamFactory(name="Team A"), TeamFactory(name="Team B")
    workload.pool.team = team_a
    workload.pool.save(update_fields=["team"])
    client.force_login(UserFactory(role="ops", teams=[team_b]))
    url = reverse("pilots:pilot_list", kwargs={"slug": workload.slug})
    assert client.get(url).status_code == 404
    assert _upload(client, workload, sample("vllm")).status_code == 404
    assert not PilotResult.objects.exists()


@pytest.mark.django_db
def test_a_gpu_model_with_a_reference_price_is_costed_at_it(workload, sample):
    mi300x = GpuModel.objects.get(slug="mi300x")
    mi300x.reference_price_per_gpu_hour_usd = Decimal("2.5000")
    mi300x.save()
    import_benchmark(
        workload=workload,
        gpu_model=mi300x,
        gpu_count=8,
        source_format="mlperf",
        content=sample("mlperf"),
    )
    [row] = pilots_of(workload)
    # $2.50 × 8 ÷ (21028.23 tokens/s × 3600 s) × 10⁶ = 20 ÷ 75,701,628 × 10⁶ = $0.264195
    assert row.cost_per_million_output_tokens_usd == pytest.approx(20 / 75_701_628 * 1e6)
    assert row.cost_per_million_output_tokens_usd == pytest.approx(0.2641952, rel=1e-6)


@pytest.mark.django_db
def test_the_page_and_a_refusal_in_chinese(client, workload):
    client.force_login(UserFactory(role="lead"))
    chinese = {"Accept-Language": "zh-Hans"}
    url = reverse("pilots:pilot_list", kwargs={"slug": workload.slug})
    page = client.get(url, headers=chinese).content.decode()
    assert "尚无试点基准测试" in page and "每百万输出 token 成本" in page
    refused = client.post(
        url,
        {
            "file": SimpleUploadedFile("summary.txt", b"hello\n"),
            "source_format": "mlperf",
            "gpu_model": "h100-sxm",
            "gpu_count": "8",
        },
        headers=chinese,
    )
    assert refused.status_code == 400
    assert "第 1 行：应为以“MLPerf Results Summary”开头的 MLPerf LoadGen 摘要" in (
        refused.content.decode()
    )


@pytest.mark.django_db
def test_the_workload_page_links_to_its_pilots(client, workload):
    client.force_login(UserFactory(role="reader"))
    page = client.get(reverse("pools:workload_detail", kwargs={"slug": workload.slug}))
    assert reverse("pilots:pilot_list", kwargs={"slug": workload.slug}) in page.content.decode()
