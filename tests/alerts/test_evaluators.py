"""Each rule kind's breaching subjects, against an independent computation from what the
test wrote, and the team scope of a rule: a team's rule reads the team's pools and
workloads and the shared ones, a fleet-wide rule everything, a pool rule one pool.

The fleet (hand figures; a window of N hours covers the N hours before the current one
and the current one: N + 1 hours of data):
- "Idle" 8 GPUs at $3.00, 10 % busy; "Busy" 8 at $2.00, 90 % busy; "Team pool" (team A)
  4 at $1.00, 5 % busy; "Silent" 8 at $1.00 and no telemetry. 48 h of telemetry each.
"""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from apps.alerts import registry
from apps.alerts.evaluators import rule_scope
from apps.alerts.models import AlertRule
from apps.backups import services as backup_services
from apps.procurement.models import ComparisonExport
from apps.reports.models import RecomputeJob
from apps.telemetry.models import ImportRun, PoolHourFlag
from tests.alerts.conftest import overdue_drill_policy, write_usage
from tests.alerts.factories import make_channel
from tests.factories import (
    BackupVersionFactory,
    GpuDeviceFactory,
    PoolFactory,
    RestoreDrillFactory,
    ScenarioFactory,
    TeamFactory,
    WorkloadFactory,
)

# name → (GPUs, price per GPU-hour, busy share, team key)
POOLS = {
    "Idle": (8, "3.00", 0.10, None),
    "Busy": (8, "2.00", 0.90, None),
    "Team pool": (4, "1.00", 0.05, "a"),
    "Silent": (8, "1.00", None, None),
}


@pytest.fixture
def fleet(hour_end):
    teams = {"a": TeamFactory(name="Team A"), "b": TeamFactory(name="Team B")}
    pools = {}
    for name, (gpus, price, busy, team) in POOLS.items():
        pool = PoolFactory(
            name=name,
            gpu_count=gpus,
            on_demand_price_per_gpu_hour_usd=Decimal(price),
            in_service_from=hour_end - timedelta(days=60),
            team=teams[team] if team else None,
        )
        if busy is not None:
            write_usage(pool, hours=48, busy_fraction=busy, end=hour_end)
        pools[name] = pool
    # write_usage deletes a pool's hours before writing them: each pool once, then the days.
    return {"pools": pools, "teams": teams, "end": hour_end, "now": timezone.now()}


def hand_idle_cost_usd(name: str, window_hours: int) -> float:
    """Σ over the window's hours of GPUs × price × (1 − busy share): every hour measured."""
    gpus, price, busy, _team = POOLS[name]
    if busy is None:
        return 0.0
    # The window is its last ``window_hours`` hour-slots, the current one included; the
    # fleet has 48 hours of data.
    hours = min(window_hours, 48)
    return sum(gpus * float(price) * (1 - busy) for _hour in range(hours))


def rule(kind, *, team=None, **values) -> AlertRule:
    return AlertRule(
        name=f"{kind} rule",
        slug=f"{kind}-rule",
        kind=kind,
        channel=make_channel(team=team),
        team=team,
        **values,
    )


def evaluate(rule, now):
    return registry.evaluator_for(rule.kind).evaluate(rule, now)


def pools_of(subjects) -> set[str]:
    return {subject.labels["pool"] for subject in subjects}


@pytest.mark.django_db
@pytest.mark.parametrize("threshold, window", [(50, 24), (100, 24), (600, 24), (1000, 168)])
def test_idle_cost_breaches_as_a_hand_computation_says(fleet, threshold, window):
    subjects = evaluate(
        rule("idle_cost", threshold_usd=Decimal(threshold), window_hours=window), fleet["now"]
    )
    expected = {
        fleet["pools"][name].slug for name in POOLS if hand_idle_cost_usd(name, window) > threshold
    }
    assert pools_of(subjects) == expected
    for subject in subjects:
        name = next(n for n, pool in fleet["pools"].items() if pool.slug == subject.labels["pool"])
        assert f"${hand_idle_cost_usd(name, window):,.2f}" in subject.summary


@pytest.mark.django_db
def test_idle_cost_in_the_scope_of_a_team_a_pool_or_the_fleet(fleet):
    team_a, team_b = fleet["teams"]["a"], fleet["teams"]["b"]
    values = {"threshold_usd": Decimal("50"), "window_hours": 24}
    fleet_wide = pools_of(evaluate(rule("idle_cost", **values), fleet["now"]))
    # Idle: 24 × 8 × 3 × 0.9 = 518.40; Team pool: 24 × 4 × 1 × 0.95 = 91.20; Busy: 38.40.
    assert fleet_wide == {"idle", "team-pool"}
    assert pools_of(evaluate(rule("idle_cost", team=team_a, **values), fleet["now"])) == {
        "idle",
        "team-pool",
    }
    # Team B owns no pool: it sees the shared ones only.
    assert pools_of(evaluate(rule("idle_cost", team=team_b, **values), fleet["now"])) == {"idle"}
    one_pool = rule("idle_cost", pool=fleet["pools"]["Busy"], **values)
    assert pools_of(evaluate(one_pool, fleet["now"])) == set()
    workload = WorkloadFactory(pool=fleet["pools"]["Idle"])
    assert pools_of(evaluate(rule("idle_cost", workload=workload, **values), fleet["now"])) == {
        "idle"
    }
    team_subject = next(
        s
        for s in evaluate(rule("idle_cost", **values), fleet["now"])
        if s.labels["pool"] == "team-pool"
    )
    assert team_subject.team_id == team_a.pk


@pytest.mark.django_db
@pytest.mark.parametrize("threshold", [4, 20, 95])
def test_low_utilisation_breaches_below_the_percentage_and_skips_unmeasured_pools(fleet, threshold):
    subjects = evaluate(
        rule("low_utilisation", threshold_pct=Decimal(threshold), window_hours=24), fleet["now"]
    )
    expected = {
        fleet["pools"][name].slug
        for name, (_gpus, _price, busy, _team) in POOLS.items()
        if busy is not None and busy * 100 < threshold
    }
    assert pools_of(subjects) == expected
    assert "silent" not in pools_of(subjects)


@pytest.mark.django_db
def test_telemetry_stale_names_the_pools_whose_newest_sample_is_too_old(fleet):
    now = fleet["now"]
    pools = fleet["pools"]
    last_seen = {"Idle": now - timedelta(hours=2), "Busy": now - timedelta(minutes=5)}
    for name, seen in last_seen.items():
        GpuDeviceFactory(
            pool=pools[name], first_seen_at=seen - timedelta(days=1), last_seen_at=seen
        )
        # An older GPU beside it: the pool's newest sample counts.
        GpuDeviceFactory(
            pool=pools[name],
            first_seen_at=seen - timedelta(days=2),
            last_seen_at=seen - timedelta(days=1),
        )
    for minutes in (1, 30, 180):
        subjects = evaluate(rule("telemetry_stale", stale_minutes=minutes), now)
        expected = {
            pools[n].slug
            for n, seen in last_seen.items()
            if now - seen > timedelta(minutes=minutes)
        }
        assert pools_of(subjects) == expected, minutes
    # Pools that never reported (no GPU at all) are not "stale".
    assert "silent" not in pools_of(evaluate(rule("telemetry_stale", stale_minutes=1), now))


@pytest.mark.django_db
def test_flagged_hours_counts_the_flagged_hours_in_the_window(fleet):
    end, pools = fleet["end"], fleet["pools"]
    flags = [
        (pools["Idle"], end - timedelta(hours=2), "over_reported"),
        (pools["Idle"], end - timedelta(hours=2), "mig_conflict"),  # the same hour twice
        (pools["Idle"], end - timedelta(hours=5), "over_reported"),
        (pools["Busy"], end - timedelta(hours=30), "clock_skew"),  # outside 24 h
    ]
    for pool, hour, kind in flags:
        PoolHourFlag.objects.create(pool=pool, hour=hour, kind=kind)
    subjects = evaluate(rule("flagged_hours", window_hours=24), fleet["now"])
    assert pools_of(subjects) == {"idle"}
    (subject,) = subjects
    assert "2 pool-hours" in subject.summary
    assert "More GPUs reporting than the pool declares" in subject.description
    assert pools_of(evaluate(rule("flagged_hours", window_hours=48), fleet["now"])) == {
        "idle",
        "busy",
    }


@pytest.mark.django_db
def test_drill_overdue_and_failed_follow_the_backup_schedule(fleet):
    pools = fleet["pools"]
    overdue = overdue_drill_policy(pools["Idle"], days_ago=40)
    on_time = overdue_drill_policy(pools["Busy"], days_ago=10)
    team_overdue = overdue_drill_policy(pools["Team pool"], days_ago=35)
    failing_workload = WorkloadFactory(pool=pools["Busy"])
    version = BackupVersionFactory(workload=failing_workload)
    # A drill whose checksum does not match: it failed.
    RestoreDrillFactory(version=version, observed=[("node-0", "c" * 64), ("node-1", "c" * 64)])
    now = fleet["now"]
    backup_services.refresh_drill_schedules(now=now)

    def due(policy):
        return policy.last_drill_at + timedelta(days=policy.drill_frequency_days)

    for policy in (overdue, on_time, team_overdue):
        policy.refresh_from_db()
    expected = {p.workload.slug for p in (overdue, on_time, team_overdue) if due(p) < now}
    subjects = evaluate(rule("drill_overdue"), now)
    assert {s.labels["workload"] for s in subjects} == expected
    assert expected == {overdue.workload.slug, team_overdue.workload.slug}
    team_b = evaluate(rule("drill_overdue", team=fleet["teams"]["b"]), now)
    assert {s.labels["workload"] for s in team_b} == {overdue.workload.slug}
    failed = evaluate(rule("drill_failed"), now)
    assert {s.labels["workload"] for s in failed} == {failing_workload.slug}
    assert registry.evaluator_for("drill_failed").severity == "critical"


@pytest.mark.django_db
def test_job_failed_one_alert_per_upload_and_per_pulled_pool(fleet):
    now, pools = fleet["now"], fleet["pools"]

    def run(pool, source, status, hours_ago, filename=""):
        return ImportRun.objects.create(
            kind="gpu",
            format="dcgm",
            source=source,
            pool=pool,
            status=status,
            filename=filename,
            message="The file is not dcgm-exporter text.",
            finished_at=now - timedelta(hours=hours_ago),
        )

    upload = run(pools["Idle"], "upload", "failed", 1, "bad.prom")
    run(pools["Idle"], "upload", "failed", 30, "old.prom")  # outside the 24 h window
    run(pools["Idle"], "upload", "succeeded", 1, "good.prom")
    team_upload = run(pools["Team pool"], "upload", "rejected", 2, "team.csv")
    for hours_ago in (0.1, 0.2, 0.3):  # a dead exporter, scraped every few minutes
        run(pools["Busy"], "scrape", "failed", hours_ago)
    export = ComparisonExport.objects.create(
        scenario=ScenarioFactory(demand_pool=pools["Idle"]),
        format="csv",
        status="failed",
        finished_at=now - timedelta(hours=3),
    )
    recompute = RecomputeJob.objects.create(
        start_day=now.date(),
        end_day=now.date(),
        status="failed",
        finished_at=now - timedelta(hours=4),
    )
    subjects = evaluate(rule("job_failed", window_hours=24), now)
    keys = {(s.labels["job"], s.labels.get("run") or s.labels.get("pool")) for s in subjects}
    assert keys == {
        ("import", str(upload.pk)),
        ("import", str(team_upload.pk)),
        ("pull", "busy"),
        ("export", str(export.pk)),
        ("recompute", str(recompute.pk)),
    }
    pull = next(s for s in subjects if s.labels["job"] == "pull")
    assert "failed 3 times" in pull.summary
    # A team's rule: its pools' and the shared ones' imports, not the fleet's exports.
    team_a = evaluate(rule("job_failed", window_hours=24, team=fleet["teams"]["a"]), now)
    assert {(s.labels["job"], s.labels.get("run") or s.labels.get("pool")) for s in team_a} == {
        ("import", str(upload.pk)),
        ("import", str(team_upload.pk)),
        ("pull", "busy"),
    }
    team_b = evaluate(rule("job_failed", window_hours=24, team=fleet["teams"]["b"]), now)
    assert str(team_upload.pk) not in {s.labels.get("run") for s in team_b}


def test_a_rules_scope_is_its_team_and_the_shared_objects():
    assert rule_scope(AlertRule(team_id=None)).everything
    scope = rule_scope(AlertRule(team_id=7))
    assert not scope.everything and scope.team_ids == frozenset({7})
    assert scope.covers_team(None) and scope.covers_team(7) and not scope.covers_team(8)


def test_the_budget_kind_has_the_showback_evaluator():
    assert registry.evaluator_for("budget").thresholds == ("threshold_pct",)
    assert registry.unavailable_reason("budget") is None
    assert registry.unavailable_reason("idle_cost") is None
    assert {kind for kind, _label in registry.KINDS} == {
        "idle_cost",
        "low_utilisation",
        "budget",
        "drill_overdue",
        "drill_failed",
        "telemetry_stale",
        "flagged_hours",
        "job_failed",
        "dollars_at_risk",
    }


def test_fingerprints_are_16_hex_digits_of_the_sorted_labels():
    first = registry.fingerprint({"rule": "idle", "pool": "a"})
    assert first == registry.fingerprint({"pool": "a", "rule": "idle"})
    assert first != registry.fingerprint({"pool": "b", "rule": "idle"})
    assert len(first) == 16 and int(first, 16) >= 0
