"""After a failed drill the next one is due after the policy's retry interval (default
7 days), not a whole drill frequency later."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.backups.forms import BackupPolicyForm
from apps.backups.models import BackupPolicy
from apps.backups.tasks import refresh_drill_schedules_task
from tests.backups.factories import make_drill, make_policy, make_version
from tests.backups.test_api import _headers

pytestmark = pytest.mark.django_db


def _drill_finished_days_ago(policy, version, days, **values):
    finished = timezone.now().replace(microsecond=0) - timedelta(days=days)
    drill = make_drill(
        policy,
        version,
        started_at=finished - timedelta(minutes=20),
        finished_at=finished,
        reference_time=version.created_at + timedelta(minutes=30),
        **values,
    )
    return drill, finished


def test_a_failed_drill_is_due_again_after_the_retry_interval(workload):
    policy = make_policy(workload)  # a drill every 30 days; retry left at its default
    assert policy.drill_retry_interval_days == 7
    version = make_version(workload, created_at=timezone.now() - timedelta(days=3))
    _, finished = _drill_finished_days_ago(policy, version, 2, resumed=False)
    policy.refresh_from_db()
    assert policy.last_drill_passed is False
    # Failed 2 days ago: due 7 days after it (5 days from now), not 30.
    assert policy.drill_due_at == finished + timedelta(days=7)
    assert policy.overdue_since is None


def test_a_passed_or_not_verified_drill_waits_the_drill_frequency(workload):
    policy = make_policy(workload)
    version = make_version(workload, created_at=timezone.now() - timedelta(days=3))
    _, finished = _drill_finished_days_ago(policy, version, 2)
    policy.refresh_from_db()
    assert policy.last_drill_passed is True
    assert policy.drill_due_at == finished + timedelta(days=30)
    _, finished = _drill_finished_days_ago(policy, version, 1, observed=[])
    policy.refresh_from_db()
    assert policy.last_drill_verdict == "not_verified"
    assert policy.drill_due_at == finished + timedelta(days=30)


def test_the_daily_task_uses_the_retry_interval_and_finds_the_retry_overdue(workload):
    policy = make_policy(workload, drill_retry_interval_days=3)
    version = make_version(workload, created_at=timezone.now() - timedelta(days=12))
    _, finished = _drill_finished_days_ago(policy, version, 10, resumed=False)
    BackupPolicy.objects.filter(pk=policy.pk).update(drill_due_at=None, overdue_since=None)
    # Failed 10 days ago, retried after 3: due 7 days ago, so overdue (30 would not be).
    assert refresh_drill_schedules_task.apply().get() == 1
    policy.refresh_from_db()
    assert policy.drill_due_at == finished + timedelta(days=3)
    assert policy.overdue_since == finished + timedelta(days=3)


def test_a_retry_never_waits_longer_than_a_regular_drill(workload):
    # Set past the form's check (the admin): frequency 5 days, retry 9 → the 5 days count.
    policy = make_policy(workload, drill_frequency_days=5, drill_retry_interval_days=9)
    version = make_version(workload, created_at=timezone.now() - timedelta(days=3))
    _, finished = _drill_finished_days_ago(policy, version, 1, resumed=False)
    policy.refresh_from_db()
    assert policy.drill_due_at == finished + timedelta(days=5)


def _policy_form_data(**overrides):
    data = {
        "covered_items": ["checkpoint_weights"],
        "rpo_minutes": "120",
        "rto_minutes": "60",
        "drill_frequency_days": "30",
        "drill_retry_interval_days": "7",
    }
    return {**data, **overrides}


@pytest.mark.parametrize(
    ("retry_days", "message"),
    [
        ("0", "Retry a failed drill after at least 1 day: type 1 or more, e.g. 7."),
        ("31", "A failed drill is retried sooner than the regular drill: at most 30 days"),
    ],
)
def test_the_policy_form_refuses_a_retry_below_a_day_or_past_the_frequency(
    workload, retry_days, message
):
    form = BackupPolicyForm(
        _policy_form_data(drill_retry_interval_days=retry_days), workload=workload
    )
    assert not form.is_valid()
    assert form.errors["drill_retry_interval_days"][0].startswith(message)


def test_a_blank_retry_interval_is_the_default_seven_days(workload):
    form = BackupPolicyForm(_policy_form_data(drill_retry_interval_days=""), workload=workload)
    assert form.is_valid(), form.errors
    assert form.save().drill_retry_interval_days == 7


def test_the_policy_page_and_api_say_when_the_retry_is_due(client, make_user, workload):
    policy = make_policy(workload, drill_retry_interval_days=4)
    version = make_version(workload, created_at=timezone.now() - timedelta(days=3))
    _, finished = _drill_finished_days_ago(policy, version, 1, resumed=False)
    client.force_login(make_user("reader"))
    page = client.get(policy.get_absolute_url()).content.decode()
    due = (finished + timedelta(days=4)).date().isoformat()
    assert f"Next drill due {due} (4 days after the failed drill)." in page
    assert 'id="drill-retry">4 days<' in page
    body = client.get(
        f"/api/v1/backup-policies/{workload.slug}/", headers=_headers(make_user("lead"))
    ).json()
    assert body["drill_retry_interval_days"] == 4
    assert body["drill_due_at"].startswith(due)
