"""The cost report and the hour-of-day profile against hand computations.

The fixture fleet is small enough to add up on paper: two pools, hourly rows written
directly (the telemetry rollups are tested in tests/telemetry), daily rows built from
them by apps.telemetry.rollups.days, requests and one interruption. Every expected figure below
is computed in the test from the same inputs with the formulas of FORMULAS.md,
not read back from the code under test.
"""

import statistics
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from apps.pools.models import (
    Deployment,
    Interruption,
    InterruptionCause,
    Pool,
    Purpose,
    Workload,
    WorkloadKind,
    WorkloadStatus,
)
from apps.pools.services import save_pool
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests
from apps.telemetry.rollups.days import rebuild_days
from tests.factories import status_history
from tests.money import cents, unit_price, within_a_cent

# A range of 2 whole UTC days plus 6 hours on each side, so the report reads daily rows
# for the middle and hourly rows for the edges.
START = datetime(2026, 3, 9, 18, tzinfo=UTC)
END = datetime(2026, 3, 12, 6, tzinfo=UTC)
HOURS = int((END - START) / timedelta(hours=1))  # 60

CLOUD_PRICE = 2.50  # USD per GPU-hour, on demand
OWNED = {
    "purchase": 24_000.0,  # USD per GPU
    "months": 48,
    "pue": 1.25,
    "kwh": 0.10,  # USD
    "operations": 7_300.0,  # USD per month, whole pool
    "tdp_kw": 0.7,  # H100 SXM, as the catalog seeds it
}


def _utilization(pool_index: int, step: int) -> float:
    return (13 * step + 29 * pool_index) % 100


@pytest.fixture
def fleet(gpu_model, django_user_model):
    cloud = Pool(
        name="Cloud inference",
        slug="cloud-inference",
        purpose=Purpose.INFERENCE,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=gpu_model,
        gpu_count=8,
        gpus_per_node=8,
        on_demand_price_per_gpu_hour_usd=Decimal(str(CLOUD_PRICE)),
        timezone="Asia/Shanghai",
    )
    owned = Pool(
        name="Owned training",
        slug="owned-training",
        purpose=Purpose.TRAINING,
        deployment=Deployment.BARE_METAL,
        gpu_model=gpu_model,
        gpu_count=16,
        gpus_per_node=8,
        purchase_price_per_gpu_usd=Decimal(str(OWNED["purchase"])),
        amortisation_months=OWNED["months"],
        pue=Decimal(str(OWNED["pue"])),
        power_price_per_kwh_usd=Decimal(str(OWNED["kwh"])),
        operations_per_month_usd=Decimal(str(OWNED["operations"])),
    )
    for pool in (cloud, owned):
        save_pool(pool)
    # Both pools are in service from long before the range (reports charge only inside it).
    Pool.objects.update(in_service_from=START - timedelta(days=30))
    serving = Workload.objects.create(
        name="Chat", slug="chat", kind=WorkloadKind.ONLINE_INFERENCE, pool=cloud, gpu_count=8
    )
    training = Workload.objects.create(
        name="Pretrain",
        slug="pretrain",
        kind=WorkloadKind.PRE_TRAINING,
        pool=owned,
        gpu_count=16,
        checkpoint_interval_minutes=60,
    )
    # Both run throughout the range: a workload is charged only for its running hours.
    for workload in (serving, training):
        status_history(workload, (START - timedelta(days=30), WorkloadStatus.RUNNING))
    usage = []
    for step in range(HOURS):
        hour = START + timedelta(hours=step)
        # The cloud pool has no telemetry for its first 5 hours: unmeasured.
        if step >= 5:
            util = _utilization(0, step)
            usage.append(
                PoolHourlyUsage(
                    pool=cloud,
                    hour=hour,
                    reporting_gpus=8,
                    capacity_gpu_hours=8,
                    busy_gpu_hours=8 * util / 100,
                    avg_utilization_pct=util,
                    max_utilization_pct=util,
                )
            )
        util = _utilization(1, step)
        usage.append(
            PoolHourlyUsage(
                pool=owned,
                hour=hour,
                reporting_gpus=16,
                capacity_gpu_hours=16,
                busy_gpu_hours=16 * util / 100,
                avg_utilization_pct=util,
                max_utilization_pct=util,
                # Measured energy on even hours only; odd hours fall back to TDP × use.
                energy_kwh=(16 * 0.5) if step % 2 == 0 else None,
            )
        )
    PoolHourlyUsage.objects.bulk_create(usage)
    WorkloadHourlyRequests.objects.bulk_create(
        WorkloadHourlyRequests(
            workload=serving,
            hour=START + timedelta(hours=step),
            requests=1000 + 10 * step,
            input_tokens=200 * (1000 + 10 * step),
            output_tokens=50 * (1000 + 10 * step),
            errors=step % 3,
        )
        for step in range(HOURS)
    )
    Interruption.objects.create(
        workload=training,
        occurred_at=START + timedelta(hours=20, minutes=40),
        cause=InterruptionCause.HARDWARE,
        restart_minutes=20,
        last_checkpoint_at=START + timedelta(hours=20, minutes=10),
    )
    Interruption.objects.create(  # no checkpoint time: half the 60-min interval counts
        workload=training,
        occurred_at=START + timedelta(hours=40),
        cause=InterruptionCause.SOFTWARE,
        restart_minutes=10,
    )
    rebuild_days(START - timedelta(days=1), END + timedelta(days=1))
    return {"cloud": cloud, "owned": owned, "serving": serving, "training": training}


def _hand_figures():
    """The expected figures, summed hour by hour straight from the definitions."""
    cloud_cost = cloud_busy = cloud_capacity = 0.0
    for step in range(5, HOURS):
        cloud_cost += 8 * CLOUD_PRICE
        cloud_busy += 8 * _utilization(0, step) / 100
        cloud_capacity += 8
    cloud_unmeasured_cost = 5 * 8 * CLOUD_PRICE  # cloud price includes power
    fixed = OWNED["purchase"] / (OWNED["months"] * 730) + OWNED["operations"] / 730 / 16
    per_kwh = OWNED["pue"] * OWNED["kwh"]
    owned_cost = owned_busy = 0.0
    for step in range(HOURS):
        busy = 16 * _utilization(1, step) / 100
        energy = 16 * 0.5 if step % 2 == 0 else OWNED["tdp_kw"] * busy
        owned_cost += 16 * fixed + per_kwh * energy
        owned_busy += busy
    requests = sum(1000 + 10 * step for step in range(HOURS))
    lost_gpu_hours = ((30 + 20) + (30 + 10)) / 60 * 16
    return {
        "cloud": {
            "measured_cost": cloud_cost,
            "cost": cloud_cost + cloud_unmeasured_cost,
            "unmeasured_cost": cloud_unmeasured_cost,
            "busy": cloud_busy,
            "measured_capacity": cloud_capacity,
            "idle": cloud_cost * (1 - cloud_busy / cloud_capacity),
            "requests": requests,
            "tokens": 250 * requests,
        },
        "owned": {
            "cost": owned_cost,
            "busy": owned_busy,
            "measured_capacity": 16 * HOURS,
            "idle": owned_cost * (1 - owned_busy / (16 * HOURS)),
            "lost": lost_gpu_hours,
            "unmeasured_usd_per_gpu_hour": fixed + per_kwh * OWNED["tdp_kw"],
        },
    }


def _get(client, **params):
    response = client.get(reverse("api-report-cost"), params)
    assert response.status_code == 200, response.content
    return {row["key"]: row for row in response.json()}


@pytest.mark.django_db
def test_cost_by_pool_matches_a_hand_computation(client, make_user, fleet):
    client.force_login(make_user("reader"))
    rows = _get(client, start=START.isoformat(), end=END.isoformat(), group_by="pool")
    hand = _hand_figures()
    cloud, owned = rows["cloud-inference"], rows["owned-training"]

    assert cloud["capacity_gpu_hours"] == 8 * HOURS
    assert cloud["unmeasured_gpu_hours"] == 8 * 5
    assert cloud["cost_usd"] == cents(hand["cloud"]["cost"])
    assert cloud["unmeasured_cost_usd"] == cents(hand["cloud"]["unmeasured_cost"])
    assert cloud["busy_gpu_hours"] == pytest.approx(hand["cloud"]["busy"])
    assert cloud["utilization_pct"] == pytest.approx(
        100 * hand["cloud"]["busy"] / hand["cloud"]["measured_capacity"]
    )
    # Unmeasured hours are never idle: idle comes from the measured cost alone.
    assert cloud["idle_cost_usd"] == cents(hand["cloud"]["idle"])
    assert cloud["requests"] == hand["cloud"]["requests"]
    assert cloud["cost_per_1k_requests_usd"] == unit_price(
        hand["cloud"]["cost"] / hand["cloud"]["requests"] * 1000
    )
    assert cloud["cost_per_1m_tokens_usd"] == unit_price(
        hand["cloud"]["cost"] / hand["cloud"]["tokens"] * 1e6
    )
    assert cloud["cost_per_busy_gpu_hour_usd"] == unit_price(
        hand["cloud"]["measured_cost"] / hand["cloud"]["busy"]
    )
    assert cloud["effective_training_gpu_hours"] is None

    # The owned pool's stored price split is rounded to 10⁻⁶ USD: within a cent.
    assert within_a_cent(owned["cost_usd"], hand["owned"]["cost"])
    assert owned["unmeasured_cost_usd"] == "0.00"
    assert within_a_cent(owned["idle_cost_usd"], hand["owned"]["idle"])
    assert owned["lost_gpu_hours"] == pytest.approx(hand["owned"]["lost"])
    effective = hand["owned"]["busy"] - hand["owned"]["lost"]
    assert owned["effective_training_gpu_hours"] == pytest.approx(effective)
    assert float(owned["cost_per_effective_training_gpu_hour_usd"]) == pytest.approx(
        hand["owned"]["cost"] / effective, rel=1e-6, abs=0.00005
    )
    assert within_a_cent(
        owned["interruption_cost_usd"],
        hand["owned"]["lost"] * hand["owned"]["unmeasured_usd_per_gpu_hour"],
    )
    # No requests: the unit costs are null, never a division error.
    assert owned["requests"] == 0
    assert owned["cost_per_1k_requests_usd"] is None
    assert owned["cost_per_1m_tokens_usd"] is None


@pytest.mark.django_db
def test_daily_rows_and_hourly_edges_give_the_same_sums_as_hourly_rows_alone(
    client, make_user, fleet
):
    """Drop the daily rows: the middle days then count nothing. Rebuilt, they count the
    same as the hourly rows they came from."""
    from apps.telemetry.models import PoolDailyUsage

    client.force_login(make_user("reader"))
    params = {"start": START.isoformat(), "end": END.isoformat()}
    with_daily = _get(client, **params)
    PoolDailyUsage.objects.all().delete()
    without = _get(client, **params)
    assert (
        without["owned-training"]["busy_gpu_hours"] < with_daily["owned-training"]["busy_gpu_hours"]
    )
    rebuild_days(START, END)
    assert _get(client, **params) == with_daily


@pytest.mark.django_db
def test_cost_by_purpose_and_workload_add_up(client, make_user, fleet):
    client.force_login(make_user("procurement"))
    params = {"start": START.isoformat(), "end": END.isoformat()}
    by_pool = _get(client, **params, group_by="pool")
    by_purpose = _get(client, **params, group_by="purpose")
    by_workload = _get(client, **params, group_by="workload")
    assert set(by_purpose) == {"training", "inference", "mixed"}
    assert by_purpose["mixed"]["cost_usd"] == "0.00"
    assert by_purpose["mixed"]["utilization_pct"] is None
    assert by_purpose["inference"]["cost_usd"] == by_pool["cloud-inference"]["cost_usd"]
    # Each pool runs one workload, so the workloads carry their pools' figures.
    assert by_workload["chat"]["cost_usd"] == by_pool["cloud-inference"]["cost_usd"]
    assert by_workload["pretrain"]["lost_gpu_hours"] == pytest.approx(
        by_pool["owned-training"]["lost_gpu_hours"]
    )
    assert "unattributed" not in by_workload


@pytest.mark.django_db
def test_a_planned_workload_on_a_shared_pool_costs_nothing(client, make_user, fleet):
    """Chat runs on 8 of the cloud pool's 8 GPUs throughout: 8 ÷ 8 of every hour's cost
    is the whole pool's; Rerank is planned, its 2 GPUs cost nothing and nothing is left
    unallocated."""
    Workload.objects.create(
        name="Rerank",
        slug="rerank",
        kind=WorkloadKind.ONLINE_INFERENCE,
        pool=fleet["cloud"],
        gpu_count=2,
    )
    client.force_login(make_user("reader"))
    rows = _get(client, start=START.isoformat(), end=END.isoformat(), group_by="workload")
    assert rows["chat"]["cost_usd"] == cents(_hand_figures()["cloud"]["cost"])
    assert rows["chat"]["split_rule"] == "declared"
    assert rows["rerank"]["cost_usd"] == "0.00"
    assert rows["rerank"]["split_rule"] == "not_running"
    assert "unallocated" not in rows and "unattributed" not in rows


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"group_by": "region"}, "group_by"),
        ({"start": "yesterday"}, "start"),
        ({"start": ""}, "start"),
        ({"pool": ""}, "pool"),
    ],
)
def test_bad_report_queries_name_the_parameter(client, make_user, params, field):
    client.force_login(make_user("reader"))
    response = client.get(reverse("api-report-cost"), params)
    assert response.status_code == 400
    assert field in response.json()


@pytest.mark.django_db
def test_an_empty_range_selects_nothing(client, make_user, fleet):
    client.force_login(make_user("reader"))
    rows = _get(client, start=END.isoformat(), end=START.isoformat())
    assert rows["cloud-inference"]["cost_usd"] == "0.00"
    assert rows["cloud-inference"]["utilization_pct"] is None


@pytest.mark.django_db
def test_profile_matches_hand_computation_in_the_pools_time_zone(client, make_user, fleet):
    """Shanghai is UTC+8 all year: UTC hour h falls on local hour (h + 8) mod 24."""
    client.force_login(make_user("reader"))
    response = client.get(
        reverse("api-usage-profile"),
        {"pool": "cloud-inference", "start": START.isoformat(), "end": END.isoformat()}
        | {"tz": "Asia/Shanghai"},
    )
    assert response.status_code == 200, response.content
    rows = response.json()
    assert [row["hour_of_day"] for row in rows] == list(range(24))
    by_local_hour: dict[int, list[float]] = {hour: [] for hour in range(24)}
    requests_by_local_hour: dict[int, list[int]] = {hour: [] for hour in range(24)}
    for step in range(HOURS):
        local = (START + timedelta(hours=step)).hour + 8
        requests_by_local_hour[local % 24].append(1000 + 10 * step)
        if step >= 5:
            by_local_hour[local % 24].append(_utilization(0, step))
    for row in rows:
        values = by_local_hour[row["hour_of_day"]]
        # Every pool-hour has 8 reporting GPUs, so 100 × Σ busy ÷ Σ reporting is the mean.
        assert row["avg_utilization_pct"] == pytest.approx(statistics.fmean(values))
        # Linear-interpolation percentile = statistics.quantiles(method="inclusive").
        expected_p95 = (
            values[0]
            if len(values) == 1
            else statistics.quantiles(values, n=100, method="inclusive")[94]
        )
        assert row["p95_utilization_pct"] == pytest.approx(expected_p95)
        assert row["mean_requests_per_hour"] == pytest.approx(
            statistics.fmean(requests_by_local_hour[row["hour_of_day"]])
        )
    daily_mean = statistics.fmean(row["mean_requests_per_hour"] for row in rows)
    assert [row["is_peak"] for row in rows] == [
        row["mean_requests_per_hour"] > daily_mean for row in rows
    ]


@pytest.mark.django_db
def test_profile_uses_the_pools_configured_peak_hours(client, make_user, fleet):
    Pool.objects.filter(pk=fleet["cloud"].pk).update(peak_hours="9-12,22-1")
    client.force_login(make_user("reader"))
    rows = client.get(
        reverse("api-usage-profile"),
        {"pool": "cloud-inference", "start": START.isoformat(), "end": END.isoformat()},
    ).json()
    assert {row["hour_of_day"] for row in rows if row["is_peak"]} == {9, 10, 11, 12, 22, 23, 0, 1}


@pytest.mark.django_db
def test_profile_refuses_unknown_zone_and_pool(client, make_user, fleet):
    client.force_login(make_user("reader"))
    url = reverse("api-usage-profile")
    bad_zone = client.get(url, {"pool": "cloud-inference", "tz": "Mars/Olympus"})
    assert bad_zone.status_code == 400 and "tz" in bad_zone.json()
    missing = client.get(url, {"pool": "nope"})
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]


@pytest.mark.django_db
def test_cost_report_of_an_unknown_pool_is_not_found(client, make_user, fleet):
    """Not an empty report that reads as "this pool cost nothing"."""
    client.force_login(make_user("reader"))
    missing = client.get(reverse("api-report-cost"), {"pool": "nope"})
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]
    found = client.get(reverse("api-report-cost"), {"pool": "cloud-inference"})
    assert found.status_code == 200 and [row["key"] for row in found.json()] == ["cloud-inference"]


@pytest.mark.django_db
def test_interruptions_api_records_who_and_computes_lost_work(client, make_user, fleet):
    ops = make_user("ops")
    client.force_login(ops)
    response = client.post(
        reverse("interruption-list"),
        {
            "workload": "pretrain",
            "occurred_at": "2026-03-11T10:00:00Z",
            "cause": "preemption",
            "restart_minutes": 15,
            "last_checkpoint_at": "2026-03-11T09:15:00Z",
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["recorded_by"] == ops.username
    assert body["lost_minutes"] == 45 + 15
    assert body["lost_gpu_hours"] == pytest.approx(60 / 60 * 16)
    refused = client.post(
        reverse("interruption-list"),
        {
            "workload": "chat",
            "occurred_at": "2026-03-11T10:00:00Z",
            "cause": "hardware",
            "restart_minutes": 5,
        },
        content_type="application/json",
    )
    assert refused.status_code == 400 and "training" in str(refused.json()["workload"])
    reader = make_user("reader")
    client.force_login(reader)
    assert client.get(reverse("interruption-list")).status_code == 200
    assert (
        client.post(
            reverse("interruption-list"),
            {"workload": "pretrain", "occurred_at": "2026-03-11T10:00:00Z"},
            content_type="application/json",
        ).status_code
        == 403
    )


@pytest.mark.django_db
def test_imported_telemetry_reaches_the_daily_rows_and_the_report(client, make_user, pool):
    """From a real nvidia-smi capture (tests/data) through the hourly rollup to the daily
    sums and the cost API: the daily rows are the hourly rows summed, and a range of whole
    days (read from the daily rows) reports the busy GPU-hours the hourly rows hold."""
    import io
    from pathlib import Path

    from django.core.management import call_command
    from django.db.models import Sum

    from apps.telemetry.models import PoolDailyUsage

    capture = sorted(
        (Path(__file__).resolve().parent.parent / "data/nvidia-smi/query_gpu_csv").glob("*.csv")
    )[0]
    out = io.StringIO()
    call_command(
        "import_telemetry", str(capture), "--format", "nvidia-smi", "--pool", pool.slug, stdout=out
    )
    call_command("rollup_usage", "--all", stdout=out)
    hourly = PoolHourlyUsage.objects.filter(pool=pool)
    assert hourly.exists(), out.getvalue()
    days = PoolDailyUsage.objects.filter(pool=pool)
    assert days.count() == len({row.hour.date() for row in hourly})
    hourly_busy = hourly.aggregate(total=Sum("busy_gpu_hours"))["total"]
    assert days.aggregate(total=Sum("busy_gpu_hours"))["total"] == pytest.approx(hourly_busy)

    first = min(row.hour for row in hourly).replace(hour=0)
    last = max(row.hour for row in hourly).replace(hour=0) + timedelta(days=1)
    Pool.objects.filter(pk=pool.pk).update(in_service_from=first)
    client.force_login(make_user("reader"))
    rows = _get(client, start=first.isoformat(), end=last.isoformat())
    assert rows[pool.slug]["busy_gpu_hours"] == pytest.approx(hourly_busy)


@pytest.mark.django_db
def test_shared_pool_is_split_by_kubernetes_labels(client, make_user, gpu_model):
    """Two GPUs of a shared pool in one hour. GPU 1 logs two samples of pod chat-1 at
    80 % and two of pod other-1 at 40 % (namespace serve); GPU 2 two samples of a batch
    pod at 50 %. By hand: the chat workload (prefix "chat-", the longest match) gets
    allocated 2/4 = 0.5 GPU-h and busy (80 + 80)/100/4 = 0.4; the catch-all "serve"
    workload 0.5 and 0.2; the pool's hour is 8 GPUs × $2.00 = $16.00, so each gets
    $16 × 0.5/8 = $1.00 and the rest ($14.00, busy 0.6 + 0.5 − 0.6 = 0.5) is the pool's
    unallocated capacity: none of the three workloads is running (they are planned)."""
    from apps.telemetry.models import GpuDevice, GpuSample
    from apps.telemetry.rollups.hourly import rollup_pool_hours

    shared = Pool(
        name="Shared",
        slug="shared",
        purpose=Purpose.MIXED,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=gpu_model,
        gpu_count=8,
        gpus_per_node=8,
        on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
    )
    save_pool(shared)
    Pool.objects.filter(pk=shared.pk).update(in_service_from=START - timedelta(days=1))
    common = {"pool": shared, "gpu_count": 4}
    Workload.objects.create(
        name="Chat",
        slug="chat",
        kind=WorkloadKind.ONLINE_INFERENCE,
        k8s_namespace="serve",
        pod_name_prefix="chat-",
        **common,
    )
    Workload.objects.create(
        name="Serve rest",
        slug="serve-rest",
        kind=WorkloadKind.BATCH_INFERENCE,
        k8s_namespace="serve",
        **common,
    )
    Workload.objects.create(
        name="Unlabelled", slug="unlabelled", kind=WorkloadKind.FULL_FINE_TUNE, **common
    )
    devices = [
        GpuDevice.objects.create(
            key=f"GPU-{n}",
            uuid=f"GPU-{n}",
            hostname="node-1",
            gpu_index=n,
            pool=shared,
            assignment=GpuDevice.Assignment.RULE,
            first_seen_at=START,
            last_seen_at=START,
        )
        for n in (1, 2)
    ]
    minute = timedelta(minutes=1)
    for offset, (device, pod, namespace, utilization) in enumerate(
        [
            (devices[0], "chat-1", "serve", 80),
            (devices[0], "chat-1", "serve", 80),
            (devices[0], "other-1", "serve", 40),
            (devices[0], "other-1", "serve", 40),
            (devices[1], "job-1", "batch", 50),
            (devices[1], "job-1", "batch", 50),
        ]
    ):
        GpuSample.objects.create(
            device=device,
            timestamp=START + offset * minute,
            utilization_pct=utilization,
            pod=pod,
            namespace=namespace,
        )
    rollup_pool_hours(shared.pk, START, START + timedelta(hours=1))
    client.force_login(make_user("reader"))
    rows = _get(
        client,
        start=START.isoformat(),
        end=(START + timedelta(hours=1)).isoformat(),
        group_by="workload",
    )
    assert rows["chat"]["capacity_gpu_hours"] == pytest.approx(0.5)
    assert rows["chat"]["busy_gpu_hours"] == pytest.approx(0.4)
    assert rows["chat"]["cost_usd"] == "1.00"
    assert rows["chat"]["idle_cost_usd"] == cents(1.0 * (1 - 0.4 / 0.5))  # $0.20
    assert rows["serve-rest"]["busy_gpu_hours"] == pytest.approx(0.2)
    assert rows["serve-rest"]["cost_usd"] == "1.00"
    assert rows["unlabelled"]["cost_usd"] == "0.00"
    assert rows["unallocated"]["cost_usd"] == "14.00"
    assert rows["unallocated"]["busy_gpu_hours"] == pytest.approx(1.1 - 0.6)
    assert "unattributed" not in rows


@pytest.mark.django_db
def test_peak_and_offpeak_unit_costs_in_the_pools_time_zone(fleet):
    """The cloud pool's peak hours are 9–12 in Shanghai (UTC+8, no DST): UTC hours 1–4.
    Its measured hours cost 8 × $2.50 each; requests are 1000 + 10 × step."""
    from apps.reports.usage.peaks import peak_split

    Pool.objects.filter(pk=fleet["cloud"].pk).update(peak_hours="9-12")
    (row,) = peak_split(START, END)
    assert row.pool.slug == "cloud-inference" and row.peak_hours == frozenset({9, 10, 11, 12})
    peak_cost = offpeak_cost = 0.0
    peak_requests = offpeak_requests = 0
    for step in range(HOURS):
        local_hour = ((START + timedelta(hours=step)).hour + 8) % 24
        requests = 1000 + 10 * step
        cost = 8 * CLOUD_PRICE if step >= 5 else 0.0  # unmeasured hours have no split
        if 9 <= local_hour <= 12:
            peak_cost += cost
            peak_requests += requests
        else:
            offpeak_cost += cost
            offpeak_requests += requests
    assert row.peak_cost_usd == pytest.approx(peak_cost)
    assert row.offpeak_cost_usd == pytest.approx(offpeak_cost)
    assert row.peak_requests == peak_requests
    assert float(row.peak_cost_per_1k_requests_usd) == pytest.approx(
        peak_cost / peak_requests * 1000
    )
    assert float(row.offpeak_cost_per_1k_requests_usd) == pytest.approx(
        offpeak_cost / offpeak_requests * 1000
    )


@pytest.mark.django_db
def test_lost_hours_of_a_shared_training_pool_are_counted_once(client, make_user, gpu_model):
    """A training pool of 8 GPUs at $2.00 shared by two jobs of 4 GPUs. Job A stops 30 min
    after its checkpoint and restarts in 15 min: (30 + 15) ÷ 60 × 4 = 3 GPU-h lost; job B
    90 min after its checkpoint, restart 30 min: (90 + 30) ÷ 60 × 4 = 8 GPU-h. The pool
    lost 11 GPU-h whichever way the report is grouped, $22.00 at $2.00 an hour."""
    from apps.pools.models import Interruption, InterruptionCause

    shared = Pool(
        name="Shared training",
        slug="shared-training",
        purpose=Purpose.TRAINING,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=gpu_model,
        gpu_count=8,
        gpus_per_node=8,
        on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
        in_service_from=START - timedelta(days=1),
    )
    save_pool(shared)
    at = START + timedelta(hours=2)
    for slug, since_checkpoint, restart in (("job-a", 30, 15), ("job-b", 90, 30)):
        job = Workload.objects.create(
            name=slug, slug=slug, kind=WorkloadKind.PRE_TRAINING, pool=shared, gpu_count=4
        )
        Interruption.objects.create(
            workload=job,
            occurred_at=at,
            cause=InterruptionCause.choices[0][0],
            restart_minutes=restart,
            last_checkpoint_at=at - timedelta(minutes=since_checkpoint),
        )
    client.force_login(make_user("reader"))
    window = {"start": START.isoformat(), "end": END.isoformat()}
    by_pool = _get(client, group_by="pool", **window)
    by_workload = _get(client, group_by="workload", **window)
    assert by_pool["shared-training"]["lost_gpu_hours"] == pytest.approx(11.0)
    assert by_workload["job-a"]["lost_gpu_hours"] == pytest.approx(3.0)
    assert by_workload["job-b"]["lost_gpu_hours"] == pytest.approx(8.0)
    assert by_workload["job-a"]["interruption_cost_usd"] == "6.00"
    # The planned jobs hold no share: the pool's cost is unallocated, its lost hours none.
    assert by_workload["unallocated"]["lost_gpu_hours"] == pytest.approx(0.0)
    assert sum(row["lost_gpu_hours"] for row in by_workload.values()) == pytest.approx(11.0)
    interruption_usd = sum(Decimal(row["interruption_cost_usd"]) for row in by_workload.values())
    assert interruption_usd == Decimal("22.00")
