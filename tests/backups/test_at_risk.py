"""Dollars at risk: GPUs × the pool's effective price per GPU-hour × the hours since the
newest checkpoint a passing restore drill proved restorable (apps/backups/at_risk.py).

Hand computation, every case below: a full fine-tune on 8 GPUs of a cloud on-demand pool
at 2.50 USD per GPU-hour; its job started 10 h ago and saved step 1000 6 h ago and step
1500 3 h ago.
- step 1000 proven: 8 × 2.50 × 6 h = 120.00 USD;
- step 1500 proven: 8 × 2.50 × 3 h = 60.00 USD;
- nothing proven: from the first event, 8 × 2.50 × 10 h = 200.00 USD.
"""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import models
from django.urls import reverse
from django.utils import timezone

from apps.backups import at_risk
from apps.training.models import EventType, TrainingEvent
from tests.factories import (
    BackupVersionFactory,
    PoolFactory,
    RestoreDrillFactory,
    TeamFactory,
    UserFactory,
    WorkloadFactory,
)


@pytest.fixture
def now():
    return timezone.now().replace(microsecond=0)


@pytest.fixture
def training(gpu_model, now):
    pool = PoolFactory(
        name="Risk pool",
        slug="risk-pool",
        gpu_model=gpu_model,
        on_demand_price_per_gpu_hour_usd=Decimal("2.50"),
    )
    assert pool.effective_price_per_gpu_hour_usd == Decimal("2.5000")
    workload = WorkloadFactory(
        name="Risky run", slug="risky-run", pool=pool, gpu_count=8, status="running"
    )
    events = [
        (EventType.JOB_STARTED, now - timedelta(hours=10), None),
        (EventType.CHECKPOINT_LOADED, now - timedelta(hours=10), 0),
        (EventType.CHECKPOINT_SAVED, now - timedelta(hours=6), 1000),
        (EventType.CHECKPOINT_SAVED, now - timedelta(hours=3), 1500),
    ]
    TrainingEvent.objects.bulk_create(
        TrainingEvent(workload=workload, job_name="run-1", event_type=kind, timestamp=at, step=step)
        for kind, at, step in events
    )
    return workload


def checkpoint(workload, step, saved_at, *, passed=True):
    """The registry's version of ``step``, kept at ``saved_at`` and drilled 30 min later
    (within the policy's 2 h RPO): passed, or failed with a checksum mismatch."""
    version = BackupVersionFactory(
        workload=workload,
        step=step,
        created_at=saved_at,
        location=f"s3://ckpt/hot/step{step}/",
    )
    observed = None if passed else [("node-0", "0" * 64), ("node-1", "0" * 64)]
    drill = RestoreDrillFactory(
        version=version, started_at=saved_at + timedelta(minutes=30), observed=observed
    )
    assert drill.passed == passed, drill.failure_reasons
    return version, drill


@pytest.mark.django_db
def test_eight_gpus_at_2_50_six_hours_after_the_proven_checkpoint_risk_120_usd(training, now):
    version, drill = checkpoint(training, 1000, now - timedelta(hours=6))
    figures = at_risk.workload_at_risk(training, now)
    assert figures.basis == at_risk.PROVEN
    assert figures.proven_step == 1000 and figures.proven_at == now - timedelta(hours=6)
    assert figures.version == version and figures.drill == drill
    assert figures.hours_at_risk == pytest.approx(6.0)
    assert figures.usd_at_risk == Decimal("120.00")


@pytest.mark.django_db
def test_a_failed_drill_falls_back_to_the_previous_proven_checkpoint(training, now):
    checkpoint(training, 1000, now - timedelta(hours=6))
    newer, failed = checkpoint(training, 1500, now - timedelta(hours=3), passed=False)
    figures = at_risk.workload_at_risk(training, now)
    assert figures.proven_step == 1000
    assert figures.usd_at_risk == Decimal("120.00")
    # A later drill of step 1500 that passes proves it: 8 × 2.50 × 3 h.
    RestoreDrillFactory(version=newer, started_at=now - timedelta(hours=2, minutes=30))
    figures = at_risk.workload_at_risk(training, now)
    assert figures.proven_step == 1500 and figures.usd_at_risk == Decimal("60.00")


@pytest.mark.django_db
def test_only_the_latest_drill_of_a_version_counts(training, now):
    version, _passed = checkpoint(training, 1000, now - timedelta(hours=6))
    RestoreDrillFactory(
        version=version,
        started_at=now - timedelta(hours=4),
        observed=[("node-0", "0" * 64), ("node-1", "0" * 64)],
    )
    figures = at_risk.workload_at_risk(training, now)
    assert figures.basis == at_risk.NOTHING_PROVEN
    assert figures.usd_at_risk == Decimal("200.00")


@pytest.mark.django_db
def test_no_drill_at_all_counts_from_the_first_training_event(training, now):
    BackupVersionFactory(workload=training, step=1000, created_at=now - timedelta(hours=6))
    figures = at_risk.workload_at_risk(training, now)
    assert figures.basis == at_risk.NOTHING_PROVEN and figures.proven_step is None
    assert figures.since == now - timedelta(hours=10)
    assert figures.usd_at_risk == Decimal("200.00")
    assert "No checkpoint proven restorable" in figures.explanation


@pytest.mark.django_db
def test_a_proven_version_whose_step_has_no_saved_event_proves_nothing(training, now):
    checkpoint(training, 999, now - timedelta(hours=6))
    assert at_risk.workload_at_risk(training, now).basis == at_risk.NOTHING_PROVEN


@pytest.mark.django_db
def test_no_events_no_figure(workload, now):
    figures = at_risk.workload_at_risk(workload, now)
    assert figures.basis == at_risk.NO_EVENTS
    assert figures.usd_at_risk is None and figures.hours_at_risk is None
    assert "No training events yet" in figures.explanation


@pytest.mark.django_db
def test_the_card_shows_the_amount_the_step_and_the_drill(client, training, now):
    version, drill = checkpoint(training, 1000, now - timedelta(hours=6))
    client.force_login(UserFactory(role="reader"))
    page = client.get(reverse("pools:workload_detail", args=[training.slug])).content.decode()
    assert reverse("backups:workload_at_risk", args=[training.slug]) in page
    card = client.get(
        reverse("backups:workload_at_risk", args=[training.slug]), headers={"HX-Request": "true"}
    ).content.decode()
    assert 'id="workload-at-risk"' in card and "<html" not in card
    # Seconds pass between ``now`` and the view: 8 × 2.50 USD a GPU-hour is 0.0056 USD a second.
    assert re.search(r'id="at-risk-usd">\$120\.0\d<', card), card
    assert version.get_absolute_url() in card and drill.get_absolute_url() in card
    assert "step 1,000" in card


@pytest.mark.django_db
def test_the_api_gives_the_figure_and_what_it_rests_on(client, training, now):
    _version, drill = checkpoint(training, 1000, now - timedelta(hours=6))
    client.force_login(UserFactory(role="reader"))
    body = client.get(f"/api/v1/workloads/{training.slug}/at-risk/").json()
    assert body["basis"] == "proven" and body["proven_step"] == 1000
    # 8 GPUs × $2.50 × 6 h = $120.00, to the cent (plus the test's own seconds).
    assert re.fullmatch(r"\d+\.\d\d", body["usd_at_risk"])
    assert abs(Decimal(body["usd_at_risk"]) - Decimal("120.00")) <= Decimal("0.05")
    assert body["hours_at_risk"] == pytest.approx(6.0, abs=0.01)
    assert body["proven_at"].startswith(f"{now - timedelta(hours=6):%Y-%m-%dT%H:%M}")
    assert body["drill"]["id"] == drill.pk and body["drill"]["verdict"] == "passed"


@pytest.mark.django_db
def test_another_teams_workload_answers_404(client, training):
    owner, other = TeamFactory(name="Owners"), TeamFactory(name="Others")
    training.pool.team = owner
    training.pool.save(update_fields=["team"])
    client.force_login(UserFactory(role="lead", teams=[other]))
    assert client.get(reverse("backups:workload_at_risk", args=[training.slug])).status_code == 404
    assert client.get(f"/api/v1/workloads/{training.slug}/at-risk/").status_code == 404
    client.force_login(UserFactory(role="lead", teams=[owner]))
    assert client.get(f"/api/v1/workloads/{training.slug}/at-risk/").status_code == 200


@pytest.mark.django_db
def test_the_overview_names_workloads_above_the_threshold_in_scope_only(
    client, settings, training, now
):
    settings.DOLLARS_AT_RISK_ATTENTION_USD = 150
    owner, other = TeamFactory(name="Owners"), TeamFactory(name="Others")
    training.pool.team = owner
    training.pool.save(update_fields=["team"])
    client.force_login(UserFactory(role="reader", teams=[owner]))
    items = {item.kind: item for item in client.get("/").context["attention"]}
    # Nothing proven: 200 USD, above 150.
    assert "$200" in items["dollars-at-risk"].sentence
    assert items["dollars-at-risk"].url.startswith(training.get_absolute_url())
    client.force_login(UserFactory(role="reader", teams=[other]))
    assert "dollars-at-risk" not in client.get("/").content.decode()
    # Proven at step 1000: 120 USD, below 150.
    checkpoint(training, 1000, now - timedelta(hours=6))
    client.force_login(UserFactory(role="reader", teams=[owner]))
    assert "dollars-at-risk" not in {item.kind for item in client.get("/").context["attention"]}


@pytest.mark.django_db
def test_the_overview_shows_the_growing_amount_from_its_cached_figures(
    client, settings, training, now
):
    """The amount grows by the minute; the Overview's figures stay cached while the
    "Needs a person" list is rendered at each visit."""
    settings.DOLLARS_AT_RISK_ATTENTION_USD = 150

    def amount_at_risk(response) -> float:
        (usd,) = re.findall(r"has \$([\d,.]+) at risk", response.content.decode())
        return float(usd.replace(",", ""))

    client.force_login(UserFactory(role="reader"))
    # Nothing proven: 8 GPUs × $2.50 × 10 h since the job started (plus the seconds the
    # test has run since ``now``: $0.50 is 90 s).
    assert amount_at_risk(client.get("/")) == pytest.approx(8 * 2.50 * 10, abs=0.5)
    # An hour later, as far as the events tell: 8 × 2.50 × 11 h.
    TrainingEvent.objects.filter(workload=training).update(
        timestamp=models.F("timestamp") - timedelta(hours=1)
    )
    later = client.get("/")
    assert amount_at_risk(later) == pytest.approx(8 * 2.50 * 11, abs=0.5)
    # The figures came from the cache: their partial was not rendered again.
    assert "dashboard/_attention.html" not in [template.name for template in later.templates]
