"""Every change to pools, workloads and catalog entries is kept: who, when, what."""

import pytest
from django.core.management import call_command
from django.forms.models import model_to_dict
from django.urls import reverse

from apps.pools.models import Pool, Workload


@pytest.mark.django_db
def test_editing_a_pool_records_who_changed_what(client, make_user, pool):
    lead = make_user("lead")
    client.force_login(lead)
    form = {
        name: value
        for name, value in model_to_dict(pool).items()
        if value is not None and name not in ("id", "owner")
    }
    form.update({"gpu_model": pool.gpu_model.pk, "on_demand_price_per_gpu_hour_usd": "2.49"})
    response = client.post(reverse("pools:pool_edit", kwargs={"slug": pool.slug}), form)
    assert response.status_code == 302, response.context["form"].errors

    page = client.get(pool.get_absolute_url())
    newest = page.context["history"][0]
    assert newest.who == lead.get_full_name() or newest.who == lead.username
    assert newest.action == "changed"
    changes = {change.label: (change.old, change.new) for change in newest.changes}
    assert changes == {
        "On-demand price per GPU-hour (USD)": ("2.9900", "2.4900"),
        # The derived price is stored, so its change is shown too.
        "Effective price per GPU-hour (USD)": ("2.9900", "2.4900"),
    }
    assert "2.9900 → 2.4900" in page.content.decode()


@pytest.mark.django_db
def test_catalog_edits_are_kept_too(client, make_user, gpu_model):
    client.force_login(make_user("lead"))
    gpu_model.save()  # the seeded row's first record (the data migration writes none)
    gpu_model.tdp_watts = 650
    gpu_model.save()
    newest = client.get(gpu_model.get_absolute_url()).context["history"][0]
    assert [(change.label, change.old, change.new) for change in newest.changes] == [
        ("TDP (W)", "700", "650")
    ]


@pytest.mark.django_db
def test_running_seed_demo_again_adds_no_history(demo):
    counts = (Pool.history.count(), Workload.history.count())
    call_command("seed_demo", verbosity=0)
    assert (Pool.history.count(), Workload.history.count()) == counts
    assert counts == (Pool.objects.count(), Workload.objects.count())
