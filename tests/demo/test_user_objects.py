"""``seed_demo`` writes only the demo's objects: beside a fleet the user built (a pool with
its own GPUs, samples, rollups, workloads, a team, budgets, an empty pool, a pool and a
superuser whose slug and username the demo also wants), two runs leave every row of the
user's as it was, and the demo's own pools are brought up to the current hour."""

import io
from dataclasses import fields
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db.models import Max
from django.utils import timezone

from apps.demo.models import DemoObject
from apps.demo.registry import DemoRegistry
from apps.pools.hours import floor_hour
from apps.pools.models import Interruption, Pool, Purpose, Workload, WorkloadKind
from apps.reports.cost.report import cost_report
from apps.showback.models import Budget
from apps.telemetry.models import (
    GpuDevice,
    GpuSample,
    PoolDailyUsage,
    PoolHourlyUsage,
    RequestSample,
    WorkloadDailyRequests,
    WorkloadHourlyRequests,
    WorkloadHourlyUsage,
)
from tests.factories import (
    PoolFactory,
    TeamFactory,
    UserFactory,
    WorkloadFactory,
    seeded_gpu_model,
)

HOURS_OF_TELEMETRY = 3


def _user_fleet(start):
    """The user's fleet, telemetry rolled up as the pipeline does: two GPUs of their H100
    pool with pod labels every 5 minutes for three hours, a chat workload's requests, a
    fine-tune on the same pool, an L40S pool that never received data, and a pool and a
    superuser holding the demo's slug "edge-t4" and username "admin"."""
    team = TeamFactory(name="Platform", slug="platform")
    ours = PoolFactory(
        name="Our H100 cluster",
        slug="our-h100",
        purpose=Purpose.MIXED,
        team=team,
        in_service_from=start,
    )
    empty = PoolFactory(
        name="Our L40S, no data yet",
        slug="our-l40s",
        gpu_model=seeded_gpu_model("l40s"),
        on_demand_price_per_gpu_hour_usd="1.85",
        in_service_from=start,
    )
    clash = PoolFactory(
        name="Our edge boxes", slug="edge-t4", gpu_model=seeded_gpu_model("t4"), gpu_count=4
    )
    chat = WorkloadFactory(
        name="Our chat",
        slug="our-chat",
        kind=WorkloadKind.ONLINE_INFERENCE,
        pool=ours,
        gpu_count=8,
        k8s_namespace="chat",
    )
    tune = WorkloadFactory(name="Our fine-tune", slug="our-tune", pool=ours, k8s_namespace="tune")
    devices = [
        GpuDevice.objects.create(
            key=f"GPU-ours-{index}",
            uuid=f"GPU-ours-{index}",
            hostname="ours-node-1",
            gpu_index=index,
            model_name="NVIDIA H100 80GB HBM3",
            pool=ours,
            assignment=GpuDevice.Assignment.MANUAL,
            first_seen_at=start,
            last_seen_at=start + timedelta(hours=HOURS_OF_TELEMETRY),
        )
        for index in (0, 1)
    ]
    GpuSample.objects.bulk_create(
        GpuSample(
            device=device,
            timestamp=start + timedelta(minutes=5 * step),
            utilization_pct=(37 + 11 * step + 23 * index) % 100,
            memory_used_mib=20_000 + 100 * step,
            memory_free_mib=61_081 - 100 * step,
            power_w=300 + step,
            namespace="chat" if index == 0 else "tune",
            pod=f"{'chat' if index == 0 else 'tune'}-{step // 12}",
        )
        for index, device in enumerate(devices)
        for step in range(HOURS_OF_TELEMETRY * 12)
    )
    RequestSample.objects.bulk_create(
        RequestSample(
            workload=chat,
            timestamp=start + timedelta(minutes=7 * step),
            input_tokens=800 + step,
            output_tokens=200 + step,
            latency_ms=900.0 + step,
            count=3,
        )
        for step in range(HOURS_OF_TELEMETRY * 8)
    )
    call_command("rollup_usage", "--all", stdout=io.StringIO())
    admin = UserFactory(role="admin", username="admin", first_name="Our", email="it@ours.example")
    budgets = [
        Budget.objects.create(team=team, amount_per_month="5000"),
        Budget.objects.create(pool=ours, amount_per_month="4000"),
    ]
    return {
        "pools": [ours, empty, clash],
        "workloads": [chat, tune],
        "team": team,
        "admin": admin,
        "budgets": budgets,
    }


def _cost_rows(start, end, group_by, keys):
    """The user's rows of the cost report, every figure to a millionth: PostgreSQL sums
    the float GPU-hours in whatever order its plan reads the rows, and the demo's rows
    beside them (and the statistics autovacuum gathers on them) may change the plan, so
    the last bits of a float sum are not the user's data."""
    return [
        {
            field.name: _to_a_millionth(getattr(row, field.name))
            for field in fields(row)
            if field.name not in ("members", "parts")
        }
        for row in cost_report(start, end, group_by)
        if row.key in keys
    ]


def _to_a_millionth(value):
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, Decimal):
        return value.quantize(Decimal("0.000001"))
    return value


def _rows(fleet, start, end):
    """Every stored row of the user's objects, as it is in the database, and their
    costs as the reports compute them."""
    pools = [pool.pk for pool in fleet["pools"]]
    workloads = [workload.pk for workload in fleet["workloads"]]
    users = get_user_model().objects.filter(pk=fleet["admin"].pk)
    return {
        "pools": list(Pool.objects.filter(pk__in=pools).order_by("pk").values()),
        "pool history": list(
            Pool.history.filter(id__in=pools).order_by("history_id").values_list("history_id")
        ),
        "devices": list(GpuDevice.objects.filter(pool__in=pools).order_by("pk").values()),
        "samples": list(GpuSample.objects.order_by("device_id", "timestamp").values()),
        "pool hours": list(PoolHourlyUsage.objects.filter(pool__in=pools).order_by("pk").values()),
        "pool days": list(PoolDailyUsage.objects.filter(pool__in=pools).order_by("pk").values()),
        "workloads": list(Workload.objects.filter(pk__in=workloads).order_by("pk").values()),
        "attribution": list(
            WorkloadHourlyUsage.objects.filter(workload__in=workloads).order_by("pk").values()
        ),
        "requests": list(RequestSample.objects.order_by("pk").values()),
        "request hours": list(
            WorkloadHourlyRequests.objects.filter(workload__in=workloads).order_by("pk").values()
        ),
        "request days": list(
            WorkloadDailyRequests.objects.filter(workload__in=workloads).order_by("pk").values()
        ),
        "interruptions": list(
            Interruption.objects.filter(workload__in=workloads).order_by("pk").values()
        ),
        "budgets": list(
            Budget.objects.filter(pk__in=[budget.pk for budget in fleet["budgets"]])
            .order_by("pk")
            .values()
        ),
        "team": list(type(fleet["team"]).objects.filter(pk=fleet["team"].pk).values()),
        "team members": list(fleet["team"].members.order_by("pk").values_list("pk")),
        "users": list(users.values()),
        "user groups and teams": [
            (list(user.groups.values_list("pk")), list(user.teams.values_list("pk")))
            for user in users
        ],
        "cost by pool": _cost_rows(start, end, "pool", {pool.slug for pool in fleet["pools"]}),
        "cost by workload": _cost_rows(
            start, end, "workload", {workload.slug for workload in fleet["workloads"]}
        ),
    }


def _demo_last_hours():
    return dict(
        PoolHourlyUsage.objects.filter(pool__in=list(DemoRegistry.load().all_of(Pool).values()))
        .values_list("pool__slug")
        .annotate(last=Max("hour"))
        .values_list("pool__slug", "last")
    )


@pytest.mark.django_db
def test_seeding_twice_beside_a_users_fleet_changes_none_of_its_rows(role_groups):
    now = timezone.now()
    # The user's telemetry fills the three hours before this one; their costs are read
    # over those complete hours, which the clock's next hour leaves as they are.
    start = floor_hour(now) - timedelta(hours=HOURS_OF_TELEMETRY)
    end = floor_hour(now)
    fleet = _user_fleet(start)
    before = _rows(fleet, start, end)
    assert before["pool hours"] and before["attribution"] and before["request hours"]
    assert before["cost by pool"] and before["cost by workload"]

    # First run, as of five hours ago; then the user puts a training job on a demo pool.
    out = io.StringIO()
    call_command("seed_demo", now=now - timedelta(hours=5), stdout=out)
    first_output = out.getvalue()
    assert _rows(fleet, start, end) == before
    demo_pool = Pool.objects.get(slug="train-h100-sh")
    on_demo_pool = WorkloadFactory(name="Our run on the demo pool", pool=demo_pool, gpu_count=8)
    fleet["workloads"].append(on_demo_pool)
    before = _rows(fleet, start, end)
    first_hours = _demo_last_hours()
    assert set(first_hours.values()) == {floor_hour(now - timedelta(hours=5))}

    # Second run, now: the demo's pools reach the current hour; nothing of the user's moved.
    hour_before = floor_hour(timezone.now())
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    hour_after = floor_hour(timezone.now())
    assert _rows(fleet, start, end) == before
    last_hours = _demo_last_hours()
    assert last_hours.keys() == first_hours.keys() and len(last_hours) == 8
    assert set(last_hours.values()) <= {hour_before, hour_after}

    # The user's pool that never received data still has none: no demo telemetry.
    assert not PoolHourlyUsage.objects.filter(pool__slug="our-l40s").exists()
    # Their slug and username stay theirs; the demo's are named apart, and say so.
    assert Pool.objects.get(slug="edge-t4").name == "Our edge boxes"
    assert Pool.objects.get(slug="edge-t4-demo").name == "Edge · T4 · stores (demo)"
    assert get_user_model().objects.get(username="admin").email == "it@ours.example"
    assert get_user_model().objects.get(username="admin-demo").is_superuser
    assert "pool edge-t4 → edge-t4-demo" in first_output
    assert "user admin → admin-demo" in first_output
    assert "admin-demo (superuser)" in first_output
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("Demo refreshed: 8 pools, 12 workloads, 6 users, 4 budgets")
    assert "Left as they are: 3 pools, 3 workloads, 1 team" in lines[0]
    # The demo's objects are marked as such, the user's never.
    marked_pools = set(DemoRegistry.load().all_of(Pool).values())
    assert not marked_pools & set(fleet["pools"]) and len(marked_pools) == 8
    # … teams, budgets, the scenario, the Slurm cluster
    assert DemoObject.objects.count() == 8 + 12 + 6 + 3 + 4 + 1 + 1


@pytest.mark.django_db
def test_a_fleet_seeded_before_the_marks_is_refreshed_not_doubled(role_groups):
    """A database seeded by a seed_demo that marked nothing: the next run takes the
    objects that are the demo's spec to the letter as the demo's, once, and names
    nothing apart; then it goes by the marks alone."""
    call_command("seed_demo", stdout=io.StringIO())
    counts = {model: model.objects.count() for model in (Pool, Workload, Budget, get_user_model())}
    marks = DemoObject.objects.count()
    DemoObject.objects.all().delete()
    # A user's own pool, made meanwhile, is not the demo's spec: never taken.
    PoolFactory(name="Our pool", slug="our-pool")
    # The earlier seed sized its budgets from the month's first days: far too small.
    # Stores' was edited since (a second history entry): the user's figure stays.
    amounts = dict(Budget.objects.values_list("pk", "amount_per_month"))
    Budget.objects.update(amount_per_month=Decimal("100.00"))
    edited = Budget.objects.get(team__slug="stores")
    edited.amount_per_month = Decimal("123.00")
    edited.save()

    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert "Named apart" not in out.getvalue()
    assert DemoObject.objects.count() == marks
    assert Pool.objects.count() == counts[Pool] + 1
    assert {model: model.objects.count() for model in (Workload, Budget, get_user_model())} == {
        model: count for model, count in counts.items() if model is not Pool
    }
    assert "our-pool" not in {pool.slug for pool in DemoRegistry.load().all_of(Pool).values()}
    assert dict(Budget.objects.values_list("pk", "amount_per_month")) == (
        amounts | {edited.pk: Decimal("123.00")}
    )
