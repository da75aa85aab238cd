"""Every RPO on a page in one unit, every RTO in one unit, chosen from the largest shown:
minutes below 3 h, hours below 72 h, else days."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.backups.recovery_units import DAYS, HOURS, MINUTES, format_in, unit_for
from apps.pools.models import Workload, WorkloadKind
from tests.backups.factories import make_drill, make_policy, make_version


@pytest.mark.parametrize(
    ("largest_seconds", "unit"),
    [
        (0, MINUTES),
        (150 * 60, MINUTES),  # 2.5 h
        (3 * 3600 - 1, MINUTES),
        (3 * 3600, HOURS),
        (72 * 3600 - 1, HOURS),
        (72 * 3600, DAYS),
        (20160 * 60, DAYS),  # the 14-day RPO
    ],
)
def test_the_unit_follows_the_largest_duration(largest_seconds, unit):
    assert unit_for([60, None, largest_seconds]) is unit


@pytest.mark.parametrize(
    ("seconds", "unit", "text"),
    [
        (20160 * 60, DAYS, "14 days"),  # 20,160 min ÷ 1,440 min/day
        ((14 * 24 + 2) * 3600, DAYS, "14.1 days"),  # 14 + 2/24 = 14.083
        (86400, DAYS, "1 day"),
        (70 * 60, DAYS, "0.049 days"),  # 70 ÷ 1,440 = 0.0486
        (90 * 60, HOURS, "1.5 h"),
        (25 * 60, MINUTES, "25 min"),
        (1530, MINUTES, "25.5 min"),
        (1440 * 60, MINUTES, "1,440 min"),
        (30, DAYS, "< 0.01 days"),
        (None, HOURS, "—"),
    ],
)
def test_a_duration_is_written_in_the_given_unit_with_the_unit(seconds, unit, text):
    assert format_in(seconds, unit) == text


@pytest.fixture
def two_weeks_rpo_drill(workload):
    """A 14-day RPO (20,160 min) and 30-min RTO; the drill restored a version 14 days and
    2 hours old and took 30 minutes."""
    policy = make_policy(workload, rpo_minutes=20160, rto_minutes=30)
    version = make_version(workload, created_at=timezone.now() - timedelta(days=15))
    started = timezone.now() - timedelta(minutes=50)
    drill = make_drill(
        policy,
        version,
        started_at=started,
        finished_at=started + timedelta(minutes=30),
        reference_time=version.created_at + timedelta(days=14, hours=2),
    )
    return policy, drill


@pytest.mark.django_db
def test_the_policy_page_writes_every_rpo_in_days(client, make_user, two_weeks_rpo_drill):
    policy, drill = two_weeks_rpo_drill
    assert drill.actual_rpo_seconds == (14 * 24 + 2) * 3600
    client.force_login(make_user("reader"))
    page = client.get(policy.get_absolute_url()).content.decode()
    assert "20,160 min" not in page and "14.0 days" not in page
    assert 'id="rpo-target">14 days<' in page
    assert "14.1 days / 14 days" in page  # the latest drill
    assert "14.1 days (14 days)" in page  # its row
    # RTOs: 30 min target and 30 min taken, so minutes.
    assert 'id="rto-target">30 min<' in page and "30 min / 30 min" in page
    # 14.083 days > 14 days: the reason uses one unit too.
    assert (
        "The restored version was 14.1 days old against an RPO of 14 days." in drill.failure_reasons
    )
    detail = client.get(drill.get_absolute_url()).content.decode()
    assert "14.1 days / 14 days" in detail and "30 min / 30 min" in detail


@pytest.mark.django_db
def test_the_fleet_view_writes_each_target_in_the_unit_that_suits_it(
    client, make_user, pool, workload
):
    chat = Workload.objects.create(
        name="Chat", slug="chat", kind=WorkloadKind.ONLINE_INFERENCE, pool=pool, gpu_count=2
    )
    make_policy(workload)  # RPO 120 min, RTO 60 min
    make_policy(chat, covered_items=["model_artifact"], rpo_minutes=20160, rto_minutes=30)
    client.force_login(make_user("reader"))
    body = client.get(reverse("backups:policy_list")).content.decode()
    # A row compares nothing with another: 120 min < 3 h stays in minutes, 20,160 min
    # ≥ 72 h is 20,160 / 1,440 = 14 days; no small target reads as a fraction of days.
    assert "120 min / 60 min" in body and "14 days / 30 min" in body
    assert "0.083 days" not in body and "20,160 min" not in body


@pytest.mark.django_db
def test_a_drill_recorded_with_htmx_swaps_the_targets_into_the_pages_new_unit(
    client, make_user, workload
):
    """The page shows 120 min while every RPO on it is below 3 h; a drill of a 14-day-old
    version makes days the page's RPO unit, and the targets card (outside the swapped
    column) comes along out of band so the page keeps one unit."""
    make_policy(workload)  # RPO 120 min, RTO 60 min
    version = make_version(workload, created_at=timezone.now() - timedelta(days=14))
    client.force_login(make_user("ops"))
    start = timezone.now() - timedelta(minutes=30)
    data = {
        "version": version.pk,
        "restored_from_tier": "hot",
        "started_at": start.strftime("%Y-%m-%dT%H:%M"),
        "finished_at": (start + timedelta(minutes=15)).strftime("%Y-%m-%dT%H:%M"),
        "resumed": "on",
        "outcome": "restored",
    }
    url = reverse("backups:drill_create", kwargs={"slug": workload.slug})
    body = client.post(url, data, headers={"HX-Request": "true"}).content.decode()
    # 120 min ÷ 1,440 min/day = 0.083 days; RTOs stay in minutes (15 and 60 min).
    assert 'id="rpo-target" hx-swap-oob="true">0.083 days<' in body
    assert 'id="rto-target" hx-swap-oob="true">60 min<' in body
