"""The catalog pages: technical leads edit both catalogs through the forms, everyone
else reads them, deletes refuse while pools or workloads use an entry, and the lists
make the same number of queries however many rows they show."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.catalog.architecture import parameter_counts
from apps.catalog.models import GpuModel, ModelArchitecture
from apps.pools.models import Deployment, Pool, Purpose, Workload, WorkloadKind

pytestmark = pytest.mark.django_db

GPU_POST = {
    "name": "Test Accelerator X",
    "slug": "",
    "vendor": "Acme",
    "memory_gb": "96",
    "memory_type": "HBM3",
    "memory_bandwidth_gb_per_second": "4000",
    "bf16_dense_tflops": "800",
    "fp16_dense_tflops": "800",
    "fp8_dense_tflops": "1600",
    "int8_dense_tops": "",
    "tdp_watts": "600",
    "interconnect": "AcmeLink",
    "interconnect_gb_per_second": "450",
    "reference_price_per_gpu_hour_usd": "2.5",
    "source_note": "Made up for the test.",
}
ARCHITECTURE_POST = {
    "name": "Test Llama 8B",
    "slug": "",
    "family": "Test",
    "layers": "32",
    "hidden_size": "4096",
    "intermediate_size": "14336",
    "attention_heads": "32",
    "kv_heads": "8",
    "head_dim": "128",
    "vocab_size": "128256",
    "max_context": "8192",
    "experts": "1",
    "experts_per_token": "1",
    "published_params": "8030261248",
    "source_note": "",
}


def make_gpu_model(slug, **overrides):
    values = {
        "name": slug.upper(),
        "slug": slug,
        "vendor": "Acme",
        "memory_gb": Decimal("80"),
        "memory_bandwidth_gb_per_second": Decimal("3000"),
        "bf16_dense_tflops": Decimal("900"),
        "tdp_watts": 700,
        **overrides,
    }
    return GpuModel.objects.create(**values)


def make_architecture(slug, **overrides):
    values = {
        "name": slug.upper(),
        "slug": slug,
        "layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "attention_heads": 32,
        "kv_heads": 32,
        "head_dim": 128,
        "vocab_size": 32000,
        "max_context": 4096,
        **overrides,
    }
    return ModelArchitecture.objects.create(**values)


def make_pool(gpu_model, slug):
    return Pool.objects.create(
        name=f"Pool {slug}",
        slug=slug,
        purpose=Purpose.TRAINING,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=gpu_model,
        gpu_count=8,
        gpus_per_node=8,
    )


@pytest.fixture
def lead_client(client, make_user):
    client.force_login(make_user("lead"))
    return client


@pytest.fixture
def ops_client(client, make_user):
    client.force_login(make_user("ops"))
    return client


def test_lead_creates_a_gpu_model_and_sees_it(lead_client):
    response = lead_client.post(reverse("catalog:gpu_model_create"), GPU_POST)

    gpu_model = GpuModel.objects.get(name="Test Accelerator X")
    assert gpu_model.slug == "test-accelerator-x"  # derived from the name
    assert response.status_code == 302
    assert response.url == gpu_model.get_absolute_url()
    detail = lead_client.get(response.url).content.decode()
    assert "Test Accelerator X" in detail
    assert "4,000 GB/s" in detail
    assert "GPU model Test Accelerator X created." in detail  # the message, shown once
    listing = lead_client.get(reverse("catalog:gpu_model_list")).content.decode()
    assert gpu_model.get_absolute_url() in listing


def test_lead_creates_an_architecture_and_sees_it(lead_client):
    response = lead_client.post(reverse("catalog:architecture_create"), ARCHITECTURE_POST)

    architecture = ModelArchitecture.objects.get(name="Test Llama 8B")
    assert response.status_code == 302
    assert response.url == architecture.get_absolute_url() == "/catalog/models/test-llama-8b/"
    detail = lead_client.get(response.url).content.decode()
    assert "Test Llama 8B" in detail
    assert "8,030,261,248" in detail  # exactly the published Llama 3 8B count
    listing = lead_client.get(reverse("catalog:architecture_list")).content.decode()
    assert architecture.get_absolute_url() in listing
    assert "8.03 B" in listing


def test_lead_edits_a_gpu_model(lead_client):
    gpu_model = make_gpu_model("edit-me")
    data = {**GPU_POST, "name": "Edited", "slug": "edit-me", "memory_gb": "141"}
    response = lead_client.post(reverse("catalog:gpu_model_edit", args=[gpu_model.slug]), data)

    assert response.status_code == 302
    gpu_model.refresh_from_db()
    assert (gpu_model.name, gpu_model.memory_gb) == ("Edited", Decimal("141"))


def test_uneven_kv_heads_re_render_with_the_numbers_and_save_nothing(lead_client):
    before = ModelArchitecture.objects.count()
    data = {**ARCHITECTURE_POST, "kv_heads": "3"}
    response = lead_client.post(reverse("catalog:architecture_create"), data)

    assert response.status_code == 200
    assert response.context["form"].errors.keys() == {"kv_heads"}
    assert "3 KV heads do not divide 32 attention heads" in response.content.decode()
    assert ModelArchitecture.objects.count() == before


def test_more_experts_per_token_than_experts_is_refused_on_that_field(lead_client):
    data = {**ARCHITECTURE_POST, "experts": "8", "experts_per_token": "9"}
    response = lead_client.post(reverse("catalog:architecture_create"), data)

    assert response.status_code == 200
    assert response.context["form"].errors.keys() == {"experts_per_token"}
    assert "routed to 9 experts when the model has 8" in response.content.decode()
    assert not ModelArchitecture.objects.filter(name="Test Llama 8B").exists()


def test_negative_bandwidth_re_renders_with_the_field_error_and_saves_nothing(lead_client):
    before = GpuModel.objects.count()
    data = {**GPU_POST, "memory_bandwidth_gb_per_second": "-5", "fp8_dense_tflops": "0"}
    response = lead_client.post(reverse("catalog:gpu_model_create"), data)

    assert response.status_code == 200
    errors = response.context["form"].errors
    assert errors.keys() == {"memory_bandwidth_gb_per_second", "fp8_dense_tflops"}
    body = response.content.decode()
    assert "Memory bandwidth (GB/s) must be above 0 GB/s; got -5" in body
    assert "FP8 dense (TFLOP/s) must be above 0 TFLOP/s; got 0" in body
    assert 'aria-invalid="true"' in body
    assert GpuModel.objects.count() == before


def test_the_dense_peak_fields_warn_against_sparse_figures(lead_client):
    body = lead_client.get(reverse("catalog:gpu_model_create")).content.decode()
    assert body.count("Dense, never 2:4-sparse") == 4  # BF16, FP16, FP8, INT8


def test_new_is_refused_as_a_slug(lead_client):
    """``/catalog/gpus/new/`` is a page: a slug typed as "new" is refused, and one
    derived from a name "New" steps past it."""
    typed = lead_client.post(
        reverse("catalog:gpu_model_create"), {**GPU_POST, "name": "Newer", "slug": "new"}
    )
    assert typed.status_code == 200
    assert "reserved for a page address" in typed.content.decode()
    derived = lead_client.post(
        reverse("catalog:gpu_model_create"), {**GPU_POST, "name": "New", "slug": ""}
    )
    assert derived.status_code == 302
    assert GpuModel.objects.get(name="New").slug == "new-2"
    assert not GpuModel.objects.filter(slug="new").exists()


@pytest.mark.parametrize(
    "url_name, factory, model",
    [
        ("gpu_model", make_gpu_model, GpuModel),
        ("architecture", make_architecture, ModelArchitecture),
    ],
)
def test_ops_gets_403_on_every_change_and_nothing_changes(ops_client, url_name, factory, model):
    entry = factory("keep-me")
    before = model.objects.count()
    post = GPU_POST if model is GpuModel else ARCHITECTURE_POST
    urls = [
        reverse(f"catalog:{url_name}_create"),
        reverse(f"catalog:{url_name}_edit", args=[entry.slug]),
        reverse(f"catalog:{url_name}_delete", args=[entry.slug]),
    ]
    for url in urls:
        assert ops_client.get(url).status_code == 403, url
        assert ops_client.post(url, {**post, "name": "Changed"}).status_code == 403, url

    assert model.objects.count() == before
    entry.refresh_from_db()
    assert entry.name == "KEEP-ME"
    # Reading stays open to every signed-in user.
    assert ops_client.get(entry.get_absolute_url()).status_code == 200


def test_deleting_a_gpu_model_used_by_a_pool_is_refused_with_the_pool_named(lead_client):
    gpu_model = make_gpu_model("in-use")
    make_pool(gpu_model, "busy-pool")
    url = reverse("catalog:gpu_model_delete", args=[gpu_model.slug])

    for response in (lead_client.get(url), lead_client.post(url)):
        assert response.status_code == 200
        body = response.content.decode()
        assert "cannot be deleted while these pools use it" in body
        assert "Pool busy-pool" in body
        assert reverse("pools:pool_detail", args=["busy-pool"]) in body
    assert GpuModel.objects.filter(pk=gpu_model.pk).exists()


def test_deleting_an_architecture_used_by_a_workload_is_refused(lead_client):
    architecture = make_architecture("in-use-model")
    Workload.objects.create(
        name="Busy fine-tune",
        slug="busy-fine-tune",
        kind=WorkloadKind.FULL_FINE_TUNE,
        model_architecture=architecture,
        pool=make_pool(make_gpu_model("for-workload"), "workload-pool"),
        gpu_count=8,
        data_parallel=8,
    )
    response = lead_client.post(reverse("catalog:architecture_delete", args=[architecture.slug]))

    assert response.status_code == 200
    assert "Busy fine-tune" in response.content.decode()
    assert ModelArchitecture.objects.filter(pk=architecture.pk).exists()


def test_the_lead_deletes_unused_entries_after_confirming(lead_client):
    gpu_model, architecture = make_gpu_model("unused"), make_architecture("unused-model")

    confirm = lead_client.get(reverse("catalog:gpu_model_delete", args=[gpu_model.slug]))
    assert "This cannot be undone" in confirm.content.decode()
    assert GpuModel.objects.filter(pk=gpu_model.pk).exists()  # a GET deletes nothing

    response = lead_client.post(reverse("catalog:gpu_model_delete", args=[gpu_model.slug]))
    assert response.status_code == 302
    assert response.url == reverse("catalog:gpu_model_list")
    response = lead_client.post(reverse("catalog:architecture_delete", args=[architecture.slug]))
    assert response.url == reverse("catalog:architecture_list")
    assert not GpuModel.objects.filter(pk=gpu_model.pk).exists()
    assert not ModelArchitecture.objects.filter(pk=architecture.pk).exists()


def test_architecture_detail_shows_the_shape_derived_total(client, make_user):
    client.force_login(make_user("reader"))
    architecture = make_architecture("mixtral-like", experts=8, experts_per_token=2, kv_heads=8)
    counts = parameter_counts(architecture.shape)

    response = client.get(architecture.get_absolute_url())

    body = response.content.decode()
    assert f'id="parameter-total">{counts.total:,}<' in body
    assert f"{counts.active:,}" in body  # mixture-of-experts: active per token too
    assert "vocab × hidden = 32,000 × 4,096" in body
    assert f'href="{reverse("pools:calculator")}?model=mixtral-like"' in body


def test_the_seeded_llama_3_8b_matches_its_published_count(client, make_user):
    client.force_login(make_user("reader"))
    architecture = ModelArchitecture.objects.get(slug="llama-3-8b")  # from the data migration

    body = client.get(architecture.get_absolute_url()).content.decode()

    assert "8,030,261,248" in body
    assert "0.00 %" in body


def test_htmx_requests_get_the_fragment(client, make_user):
    client.force_login(make_user("reader"))
    for name in ("catalog:gpu_model_list", "catalog:architecture_list"):
        fragment = client.get(reverse(name), headers={"HX-Request": "true"}).content.decode()
        assert "<html" not in fragment and "<table" in fragment


def _list_queries(client, url_name):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse(url_name))
    assert response.status_code == 200
    return len(queries)


@pytest.mark.parametrize("url_name", ["catalog:gpu_model_list", "catalog:architecture_list"])
def test_list_pages_make_a_constant_number_of_queries(client, make_user, url_name):
    client.force_login(make_user("reader"))
    ModelArchitecture.objects.all().delete()
    GpuModel.objects.all().delete()

    def add_rows(first, last):
        for index in range(first, last):
            make_pool(make_gpu_model(f"gpu-{index}"), f"pool-{index}")
            make_architecture(f"model-{index}", experts=4, experts_per_token=2)

    add_rows(0, 2)
    with_two = _list_queries(client, url_name)
    add_rows(2, 6)
    with_six = _list_queries(client, url_name)

    assert with_six == with_two
    page = client.get(reverse(url_name)).content.decode()
    prefix = "gpus/gpu" if url_name == "catalog:gpu_model_list" else "models/model"
    assert all(f'href="/catalog/{prefix}-{index}/"' in page for index in range(6))
