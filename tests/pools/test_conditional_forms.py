"""Forms that fit the choice: a section shown only for some values of another field is
not asked for otherwise (its fields keep the object's value, or the model's default),
and what is shown is still validated. A new pool or workload is owned by its creator
unless another owner is chosen."""

from decimal import Decimal

import pytest
from django.urls import reverse

from apps.pools.models import Pool, Workload

INFERENCE_WORKLOAD = {
    "name": "Chat API",
    "kind": "online_inference",
    "status": "planned",
    "gpu_count": 2,
    "weight_precision": "bf16",
    "kv_cache_precision": "bf16",
    "context_length": 8192,
    "concurrent_sequences": 16,
    "inference_tensor_parallel": 2,
}


@pytest.fixture
def lead(client, make_user):
    user = make_user("lead")
    client.force_login(user)
    client.user = user
    return client


@pytest.mark.django_db
def test_an_inference_workload_saves_without_the_training_settings(lead, pool):
    response = lead.post(reverse("pools:workload_create"), {**INFERENCE_WORKLOAD, "pool": pool.pk})
    assert response.status_code == 302, response.context["form"].errors
    workload = Workload.objects.get(name="Chat API")
    defaults = Workload()
    # The hidden training settings are the model's defaults, not blanks.
    for name in ("precision", "optimizer", "zero_stage", "micro_batch_size", "seq_len"):
        assert getattr(workload, name) == getattr(defaults, name), name
    assert workload.expected_mfu == defaults.expected_mfu
    assert workload.context_length == 8192 and workload.inference_tensor_parallel == 2


@pytest.mark.django_db
def test_a_training_workload_still_needs_its_training_settings(lead, pool):
    response = lead.post(
        reverse("pools:workload_create"),
        {**INFERENCE_WORKLOAD, "kind": "pre_training", "pool": pool.pk},
    )
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert {"precision", "optimizer", "micro_batch_size", "seq_len"} <= set(errors)
    # The inference block is the hidden one now: its fields are not asked for.
    assert not {"weight_precision", "context_length"} & set(errors)
    assert not Workload.objects.filter(name="Chat API").exists()


@pytest.mark.django_db
def test_editing_a_workload_keeps_the_hidden_settings_it_had(lead, pool):
    lead.post(reverse("pools:workload_create"), {**INFERENCE_WORKLOAD, "pool": pool.pk})
    workload = Workload.objects.get(name="Chat API")
    Workload.objects.filter(pk=workload.pk).update(seq_len=2048)
    response = lead.post(
        reverse("pools:workload_edit", kwargs={"slug": workload.slug}),
        {**INFERENCE_WORKLOAD, "pool": pool.pk, "slug": workload.slug, "context_length": 4096},
    )
    assert response.status_code == 302, response.context["form"].errors
    workload.refresh_from_db()
    assert workload.context_length == 4096 and workload.seq_len == 2048


@pytest.mark.django_db
def test_a_cloud_pool_saves_without_owned_hardware_inputs(lead, gpu_model):
    response = lead.post(
        reverse("pools:pool_create"),
        {
            "name": "Rented H100",
            "purpose": "inference",
            "deployment": "cloud_on_demand",
            "compliance_zone": "united_states",
            "gpu_model": gpu_model.pk,
            "gpu_count": 8,
            "gpus_per_node": 8,
            "interconnect": "pcie",
            "on_demand_price_per_gpu_hour_usd": "2.50",
        },
    )
    assert response.status_code == 302, response.context["form"].errors
    pool = Pool.objects.get(name="Rented H100")
    assert pool.pue == Pool().pue
    assert pool.effective_price_per_gpu_hour_usd == Decimal("2.5000")


@pytest.mark.django_db
def test_the_form_marks_the_conditional_sections_for_the_page(lead):
    page = lead.get(reverse("pools:workload_create")).content.decode()
    training = "full_fine_tune lora_fine_tune multimodal_training pre_training"
    inference = "online_inference api_service batch_inference edge_inference"
    assert f'data-show-when="id_kind" data-show-values="{training}"' in page
    assert f'data-show-when="id_kind" data-show-values="{inference}"' in page
    pool_page = lead.get(reverse("pools:pool_create")).content.decode()
    assert 'data-show-values="cloud_on_demand cloud_reserved"' in pool_page
    assert 'data-show-values="bare_metal on_premises"' in pool_page


@pytest.mark.django_db
@pytest.mark.parametrize("url_name", ["pools:pool_create", "pools:workload_create"])
def test_a_new_object_is_owned_by_its_creator(lead, url_name):
    form = lead.get(reverse(url_name)).context["form"]
    assert form["owner"].value() == lead.user.pk
