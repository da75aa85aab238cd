"""Declarative API cases: every viewset of the router (config/api_urls.py), read and
written as each kind of user, from one table of how to make its objects.

For each viewset the suite checks list and detail (a signed-in user reads; an anonymous
one is refused), out of scope (a team member neither lists nor reads, changes or deletes
another team's object: 404, as if absent), and the writes the viewset offers: refused
(403) to a user without the model's permission, allowed to one with it. Who holds a
permission is read from the role groups the migrations create, not restated here.

The table ``CASES`` is the only per-viewset knowledge; a viewset added to the router
without a row fails ``test_every_router_viewset_has_a_case``.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.test import APIClient

from apps.core.roles import ROLES
from apps.pools.models import Interruption
from apps.showback.models import Budget
from config.api_urls import router
from tests.alerts.factories import make_alert, make_channel, make_rule, make_silence
from tests.factories import (
    BackupPolicyFactory,
    BackupVersionFactory,
    ClusterFactory,
    GpuModelFactory,
    ModelArchitectureFactory,
    PilotResultFactory,
    PoolFactory,
    PullSourceFactory,
    RestoreDrillFactory,
    ScenarioFactory,
    TeamFactory,
    UserFactory,
    WorkloadFactory,
)

pytestmark = pytest.mark.django_db


def _workload(team):
    return WorkloadFactory(pool=PoolFactory(team=team))


def _interruption(team):
    return Interruption.objects.create(
        workload=_workload(team),
        occurred_at=timezone.now() - timedelta(hours=1),
        cause="hardware",
        restart_minutes=10,
    )


def _exchange_rate(team):
    from apps.currencies.models import ExchangeRate

    month = ExchangeRate.objects.count() + 1
    return ExchangeRate.objects.create(
        month=date(2026, month, 1), currency="CNY", units_per_usd=Decimal("7.1")
    )


def _slurm_rule(team):
    from apps.slurm.models import SlurmMappingRule

    return SlurmMappingRule.objects.create(
        field="account", pattern="proj-*", workload=_workload(team)
    )


def _audit_event(team):
    from apps.accounts.models import AuditEvent

    return AuditEvent.objects.create(
        kind=AuditEvent.Kind.values[0],
        method=AuditEvent.Method.values[0],
        actor=UserFactory(role="lead"),
    )


@dataclass(frozen=True)
class Case:
    basename: str
    # Makes one object; ``team`` is its team (None: shared), where the model has one.
    make: Callable
    # Whether a team member is kept out of another team's objects.
    scoped: bool = True
    # What identifies the object in its URL, when not its slug.
    lookup: Callable = lambda obj: obj.slug
    # The role that reads the shared objects (a signed-in user with no role: "reader").
    reader: str = "reader"

    def __str__(self):
        return self.basename


CASES = [
    Case("pool", lambda team: PoolFactory(team=team)),
    Case("workload", _workload),
    Case("gpu-model", lambda team: GpuModelFactory(), scoped=False),
    Case("cluster", lambda team: ClusterFactory(), scoped=False),
    Case("slurm-rule", _slurm_rule, lookup=lambda obj: obj.pk),
    Case("exchange-rate", _exchange_rate, scoped=False, lookup=lambda obj: obj.pk),
    Case("model-architecture", lambda team: ModelArchitectureFactory(), scoped=False),
    Case("scenario", lambda team: ScenarioFactory(demand_pool=PoolFactory(team=team), team=team)),
    Case("interruption", _interruption, lookup=lambda obj: obj.pk),
    Case(
        "backup-policy",
        lambda team: BackupPolicyFactory(workload=_workload(team)),
        lookup=lambda obj: obj.workload.slug,
    ),
    Case(
        "backup-version",
        lambda team: BackupVersionFactory(workload=_workload(team)),
        lookup=lambda obj: obj.pk,
    ),
    Case(
        "restore-drill",
        lambda team: RestoreDrillFactory(version=BackupVersionFactory(workload=_workload(team))),
        lookup=lambda obj: obj.pk,
    ),
    Case("pull-source", lambda team: PullSourceFactory(pool=PoolFactory(team=team))),
    Case("pilot", lambda team: PilotResultFactory(workload=_workload(team)), lookup=lambda o: o.pk),
    # Superusers only.
    Case("audit-event", _audit_event, scoped=False, lookup=lambda obj: obj.pk, reader="admin"),
    Case("alert-rule", lambda team: make_rule(team=team)),
    Case("alert-channel", lambda team: make_channel(team=team)),
    Case(
        "alert",
        lambda team: make_alert(make_rule(team=team), PoolFactory(team=team)),
        lookup=lambda obj: obj.pk,
    ),
    Case("silence", lambda team: make_silence(rule=make_rule(team=team)), lookup=lambda o: o.pk),
    # A team and its budget are seen by its members and the fleet-wide roles only.
    Case("team", lambda team: team or TeamFactory(), reader="finance"),
    Case(
        "budget",
        lambda team: Budget.objects.create(
            team=team or TeamFactory(), amount_per_month=Decimal("1000")
        ),
        reader="finance",
        lookup=lambda obj: obj.pk,
    ),
]
SCOPED = [case for case in CASES if case.scoped]


def test_every_router_viewset_has_a_case():
    assert sorted(basename for _prefix, _viewset, basename in router.registry) == sorted(
        case.basename for case in CASES
    )


def _viewset(case):
    return next(viewset for _p, viewset, basename in router.registry if basename == case.basename)


def _list_url(case):
    return f"/api/v1/{next(p for p, _v, b in router.registry if b == case.basename)}/"


def _detail_url(case, obj):
    return f"{_list_url(case)}{case.lookup(obj)}/"


def _client(user=None):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def _items(response):
    body = response.json()
    return body["results"] if isinstance(body, dict) and "results" in body else body


def _permission(case, action):
    model = _viewset(case).queryset.model
    return f"{model._meta.app_label}.{action}_{model._meta.model_name}"


def _user_with(permission, teams=()):
    """A user of the first role whose group holds ``permission``; else a superuser."""
    for role_key, role in (("lead", ROLES[0]), ("ops", ROLES[1]), ("procurement", ROLES[2])):
        group = Group.objects.get(name=role.name)
        app_label, codename = permission.split(".")
        if group.permissions.filter(content_type__app_label=app_label, codename=codename):
            return UserFactory(role=role_key, teams=teams)
    return UserFactory(role="admin", teams=teams)


def _offers(case, action):
    return hasattr(_viewset(case), action)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_list_and_detail_as_a_signed_in_user(case):
    obj = case.make(None)
    client = _client(UserFactory(role=case.reader))
    listed = client.get(_list_url(case))
    assert listed.status_code == 200
    assert len(_items(listed)) >= 1
    assert client.get(_detail_url(case, obj)).status_code == 200
    if case.reader != "reader":
        # Out of reach of a signed-in user without that role: refused, or absent.
        plain = _client(UserFactory(role="reader"))
        assert plain.get(_detail_url(case, obj)).status_code in (403, 404)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_anonymous_is_refused(case):
    obj = case.make(None)
    client = _client()
    assert client.get(_list_url(case)).status_code in (401, 403)
    assert client.get(_detail_url(case, obj)).status_code in (401, 403)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_writes_without_the_permission_are_forbidden(case):
    obj = case.make(None)
    client = _client(UserFactory(role="reader"))
    reader = _client(UserFactory(role=case.reader))
    if _offers(case, "create"):
        assert client.post(_list_url(case), {}, format="json").status_code == 403
    if _offers(case, "partial_update"):
        assert client.patch(_detail_url(case, obj), {}, format="json").status_code == 403
    if _offers(case, "destroy"):
        assert client.delete(_detail_url(case, obj)).status_code == 403
    assert reader.get(_detail_url(case, obj)).status_code == 200


@pytest.mark.parametrize("case", CASES, ids=str)
def test_writes_with_the_permission_are_allowed(case):
    obj = case.make(None)
    if _offers(case, "partial_update"):
        client = _client(_user_with(_permission(case, "change")))
        assert client.patch(_detail_url(case, obj), {}, format="json").status_code == 200
    if _offers(case, "destroy"):
        client = _client(_user_with(_permission(case, "delete")))
        deleted = client.delete(_detail_url(case, obj))
        # 409: the object has history that must be kept (it is archived instead).
        assert deleted.status_code in (204, 409), deleted.content
        if deleted.status_code == 204:
            assert client.get(_detail_url(case, obj)).status_code == 404


@pytest.mark.parametrize("case", SCOPED, ids=str)
def test_another_teams_object_is_out_of_scope(case):
    own, other = TeamFactory(), TeamFactory()
    theirs = case.make(other)
    mine = case.make(own)
    member = UserFactory(role="lead", teams=[own])
    client = _client(member)
    listed = [item.get("id", item.get("slug")) for item in _items(client.get(_list_url(case)))]
    assert case.lookup(theirs) not in listed or theirs.pk not in listed
    assert client.get(_detail_url(case, theirs)).status_code == 404
    assert client.get(_detail_url(case, mine)).status_code == 200
    # Members who may change and delete such objects, in their own team (a permission
    # that only superusers hold reaches every team).
    for action, method in (("change", "patch"), ("delete", "delete")):
        writer = _user_with(_permission(case, action), teams=[own])
        offered = _offers(case, "partial_update" if action == "change" else "destroy")
        if offered and not writer.is_superuser:
            response = getattr(_client(writer), method)(_detail_url(case, theirs))
            assert response.status_code == 404, (action, response.status_code)
    # Finance reads every team's objects.
    assert _client(UserFactory(role="finance")).get(_detail_url(case, theirs)).status_code == 200
