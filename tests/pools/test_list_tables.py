"""The pool and workload lists sort by every sortable column, in SQL, both ways; the
expected orders are computed here from the objects, not read from the page."""

from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.catalog.models import ModelArchitecture
from apps.pools.models import Deployment, Pool, Purpose, Workload, WorkloadKind
from apps.pools.services import save_pool

# name, region, GPUs, on-demand price per GPU-hour, workloads placed on it: each column
# orders the four pools differently.
POOLS = [
    ("Pool A", "us-east", 32, "1.50", 1),
    ("Pool B", "ap-south", 8, "4.00", 3),
    ("Pool C", "eu-west", 64, "0.60", 0),
    ("Pool D", "sa-east", 16, "2.25", 2),
]


@pytest.fixture
def pools(gpu_model, architecture):
    made = []
    for index, (name, region, gpus, price, workload_count) in enumerate(POOLS):
        pool = Pool(
            name=name,
            slug=name.lower().replace(" ", "-"),
            purpose=Purpose.TRAINING if index % 2 else Purpose.INFERENCE,
            deployment=Deployment.CLOUD_ON_DEMAND,
            region=region,
            gpu_model=gpu_model,
            gpu_count=gpus,
            gpus_per_node=8,
            on_demand_price_per_gpu_hour_usd=Decimal(price),
        )
        save_pool(pool)
        for number in range(workload_count):
            Workload.objects.create(
                name=f"{name} job {number}",
                slug=f"{pool.slug}-job-{number}",
                kind=WorkloadKind.BATCH_INFERENCE,
                model_architecture=architecture,
                pool=pool,
                gpu_count=8,
            )
        made.append(pool)
    return made


@pytest.fixture
def lead_client(client, make_user):
    client.force_login(make_user("lead"))
    return client


POOL_KEYS = {
    "name": lambda pool: pool.name,
    "region": lambda pool: pool.region,
    "gpus": lambda pool: pool.gpu_count,
    "price": lambda pool: pool.effective_price_per_gpu_hour_usd,
    "price_per_hour": lambda pool: pool.price_per_hour_usd,
    "workloads": lambda pool: pool.workloads.count(),
}


def _listed(response):
    return [record.slug for record in response.context["page"]]


@pytest.mark.django_db
@pytest.mark.parametrize("sort", sorted(POOL_KEYS))
def test_pool_list_sorts_by_each_column_both_ways(lead_client, pools, sort):
    key = POOL_KEYS[sort]
    ascending = [pool.slug for pool in sorted(pools, key=lambda pool: (key(pool), pool.name))]
    assert len({key(pool) for pool in pools}) == len(pools), "the column must tell them apart"

    assert _listed(lead_client.get(reverse("pools:pool_list"), {"sort": sort})) == ascending
    descending = lead_client.get(reverse("pools:pool_list"), {"sort": f"-{sort}"})
    assert _listed(descending) == ascending[::-1]


@pytest.mark.django_db
def test_pool_list_header_says_how_it_is_sorted_and_offers_the_other_way(lead_client, pools):
    body = lead_client.get(reverse("pools:pool_list"), {"sort": "-gpus"}).content.decode()
    assert 'class="table-sort desc" href="?sort=gpus"' in body
    assert 'aria-sort="descending"' in body
    # Every sortable header swaps the table in place and keeps the URL shareable: the
    # pools' own 6 and the 3 usage and cost columns apps/reports registers.
    assert body.count('hx-target="#pool-table" hx-swap="outerHTML" hx-push-url="true"') == 6 + 3
    # Units stay in the cells, as before.
    assert "$1.50/GPU-h" in body and "$48.00/h" in body


@pytest.mark.django_db
def test_pool_table_fragment_is_the_table_alone_and_keeps_the_filter(lead_client, pools):
    response = lead_client.get(
        reverse("pools:pool_list"),
        {"purpose": "training", "sort": "-price"},
        headers={"HX-Request": "true", "HX-Target": "pool-table"},
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="pool-table">')
    assert "<html" not in body and "page-header" not in body and "<form" not in body
    # Training pools are B and D (odd indexes); B costs more per GPU-hour.
    assert _listed(response) == ["pool-b", "pool-d"]
    # Sort links keep the filter; the filter form's hidden sort follows the table.
    assert 'href="?purpose=training&amp;sort=gpus"' in body
    assert 'id="pool-table-sort" value="-price" hx-swap-oob="true"' in body
    totals = response.context["totals"]
    assert totals["pool_count"] == 2 and totals["gpu_total"] == 8 + 16
    # The footer shows the same sums: 8 × $4.00 + 16 × $2.25 per hour.
    assert "2 pools</td>" in body and "24 GPUs</td>" in body and "$68.00/h</td>" in body


@pytest.mark.django_db
def test_a_filter_matching_nothing_says_so_and_offers_to_clear_it(lead_client, pools):
    body = lead_client.get(
        reverse("pools:pool_list"),
        {"q": "no such pool"},
        headers={"HX-Request": "true", "HX-Target": "pool-table"},
    ).content.decode()
    assert "No pools match these filters" in body and "Clear filters" in body


@pytest.mark.django_db
def test_pool_page_carries_the_sort_in_the_filter_form(lead_client, pools):
    body = lead_client.get(reverse("pools:pool_list"), {"sort": "region"}).content.decode()
    start = body.index('<form id="pool-filter"')
    form = body[start : body.index("</form>", start)]
    assert 'name="sort" id="pool-table-sort" value="region"' in form
    assert "hx-swap-oob" not in body  # only htmx swaps update it out of band


@pytest.mark.django_db
def test_an_unknown_sort_falls_back_to_the_name(lead_client, pools):
    response = lead_client.get(reverse("pools:pool_list"), {"sort": "owner__password"})
    assert _listed(response) == ["pool-a", "pool-b", "pool-c", "pool-d"]


WORKLOADS = [
    # name, kind, GPUs
    ("Alpha", WorkloadKind.ONLINE_INFERENCE, 16),
    ("Bravo", WorkloadKind.BATCH_INFERENCE, 4),
    ("Charlie", WorkloadKind.LORA_FINE_TUNE, 8),
]

WORKLOAD_KEYS = {
    "name": lambda workload: workload.name,
    "kind": lambda workload: workload.kind,
    "model": lambda workload: workload.model_architecture.name,
    "pool": lambda workload: workload.pool.name,
    "gpus": lambda workload: workload.gpu_count,
}


@pytest.fixture
def workloads(gpu_model, catalog):
    architectures = list(
        ModelArchitecture.objects.filter(slug__in=["llama-2-13b", "llama-3-70b", "qwen2-5-7b"])
    )
    assert len(architectures) == 3
    # Pools in the reverse order of the names, architectures in yet another.
    made = []
    for index, (name, kind, gpus) in enumerate(WORKLOADS):
        pool = Pool(
            name=f"Pool {'ZYX'[index]}",
            slug=f"pool-{index}",
            purpose=Purpose.MIXED,
            deployment=Deployment.CLOUD_ON_DEMAND,
            gpu_model=gpu_model,
            gpu_count=16,
            gpus_per_node=8,
            on_demand_price_per_gpu_hour_usd=Decimal("2"),
        )
        save_pool(pool)
        made.append(
            Workload.objects.create(
                name=name,
                slug=name.lower(),
                kind=kind,
                model_architecture=architectures[(index + 1) % 3],
                pool=pool,
                gpu_count=gpus,
            )
        )
    return made


@pytest.mark.django_db
@pytest.mark.parametrize("sort", sorted(WORKLOAD_KEYS))
def test_workload_list_sorts_by_each_column_both_ways(lead_client, workloads, sort):
    key = WORKLOAD_KEYS[sort]
    assert len({key(workload) for workload in workloads}) == len(workloads)
    ascending = [workload.slug for workload in sorted(workloads, key=key)]

    url = reverse("pools:workload_list")
    assert _listed(lead_client.get(url, {"sort": sort})) == ascending
    assert _listed(lead_client.get(url, {"sort": f"-{sort}"})) == ascending[::-1]


@pytest.mark.django_db
def test_workload_filter_keeps_working_with_a_sort(lead_client, workloads):
    workloads[0].archived_at = timezone.now()
    workloads[0].save()
    url = reverse("pools:workload_list")
    assert _listed(lead_client.get(url, {"sort": "-gpus"})) == ["charlie", "bravo"]
    fragment = lead_client.get(
        url,
        {"archived": "all", "sort": "-gpus"},
        headers={"HX-Request": "true", "HX-Target": "workloads"},
    )
    assert _listed(fragment) == ["alpha", "charlie", "bravo"]
    body = fragment.content.decode()
    assert body.lstrip().startswith('<div id="workloads">') and "<form" not in body
    assert _listed(lead_client.get(url, {"archived": "true"})) == ["alpha"]
    # The fit engine's columns are there for each row.
    assert body.count('class="badge bg-') >= 3 and " GB " in body
