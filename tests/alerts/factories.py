"""Alert objects for tests: rules go through ``services.save_rule`` as the views and the
API do; names are unique per call unless a test names them."""

import itertools
from datetime import timedelta

from django.utils import timezone
from django.utils.text import slugify

from apps.alerts import registry, services
from apps.alerts.models import Alert, AlertChannel, AlertRule, Silence

_numbers = itertools.count(1)


def make_channel(name=None, *, kind="webhook", url="https://hooks.example.com/alerts", **values):
    name = name or f"Test channel {next(_numbers)}"
    if kind == "email":
        values.setdefault("to", "oncall@example.com")
        url = ""
    channel, _created = AlertChannel.objects.get_or_create(
        slug=slugify(name), defaults={"name": name, "kind": kind, "url": url, **values}
    )
    return channel


def make_rule(name=None, *, kind="drill_overdue", channel=None, **values):
    name = name or f"Test rule {next(_numbers)}"
    existing = AlertRule.objects.filter(slug=slugify(name)).first()
    if existing:
        return existing
    rule = AlertRule(
        name=name,
        slug=slugify(name),
        kind=kind,
        channel=channel or make_channel(team=values.get("team")),
        **values,
    )
    return services.save_rule(rule)


def make_alert(rule, pool, **values):
    labels = {"alertname": rule.name, "rule": rule.slug, "kind": rule.kind, "pool": pool.slug}
    return Alert.objects.create(
        rule=rule,
        rule_name=rule.name,
        kind=rule.kind,
        fingerprint=registry.fingerprint(labels),
        labels=labels,
        annotations={"summary": f"{pool.name}: walk alert", "description": "A walk alert."},
        team=pool.team,
        starts_at=values.pop("starts_at", timezone.now()),
        **values,
    )


def make_silence(*, rule=None, matchers=None, hours=2, **values):
    now = timezone.now()
    return Silence.objects.create(
        rule=rule,
        matchers=matchers or {},
        team=rule.team if rule else values.pop("team", None),
        starts_at=values.pop("starts_at", now),
        ends_at=values.pop("ends_at", now + timedelta(hours=hours)),
        comment=values.pop("comment", "A test silence"),
        **values,
    )
