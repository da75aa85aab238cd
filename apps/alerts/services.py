"""Evaluating the rules and delivering what they raise.

**Evaluation** (``evaluate_rules``): each enabled rule's evaluator lists the subjects that
breach it now (apps/alerts/evaluators.py); their labels' fingerprints are compared with
the rule's firing alerts, in one transaction per rule that holds the rule's row:

- a new fingerprint raises an alert and makes its firing delivery to the rule's channel;
- a firing alert whose fingerprint is gone resolves, with a resolved delivery to every
  channel its firing delivery went (or is going) to;
- a fingerprint still there changes nothing: one notification when an alert starts and
  one when it resolves, never one per evaluation.

Alerts of a rule that is disabled or deleted resolve the same way, so an incident a
receiver opened is closed. A rule whose evaluator raises keeps its alerts as they are
and records the error on the rule.

**Delivery** (``deliver_due``): deliveries due now are claimed one by one (an UPDATE that
moves their next attempt a lease ahead, so two workers never send the same one), sent
outside any transaction, and recorded: sent; retried after 30 s × 2^(attempt − 1), at most
an hour apart (``ALERT_RETRY_BASE_SECONDS``, ``ALERT_RETRY_MAX_SECONDS``); or failed, with
a sentence a person can act on, when the receiver refuses for good or after
``ALERT_DELIVERY_MAX_ATTEMPTS`` attempts or ``ALERT_DELIVERY_GIVE_UP_HOURS``. A resolved
notification waits until its firing one is done, so a receiver never hears them out of
order. A silence holds back firing notifications (checked when the alert fires and again
before each attempt); an alert whose firing notification went out is still told
resolved.
"""

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from apps.alerts import budget_evaluator, evaluators, notify, registry
from apps.alerts.models import Alert, AlertChannel, AlertRule, Delivery, Silence
from apps.core.outbox import enqueue
from apps.core.sentences import Sentence, gettext_noop, sentence, to_data

logger = logging.getLogger(__name__)

# Labels every alert carries beside its subject's; the fingerprint leaves out the ones a
# rename changes, so renaming a rule does not resolve and raise its alerts again.
UNFINGERPRINTED_LABELS = ("alertname", "severity")
# A claimed delivery is someone's for this long: one whose worker died is tried again after.
CLAIM_LEASE = timedelta(minutes=5)
DELIVERY_PASS_LIMIT = 200
DELIVERY_TIME_BUDGET_SECONDS = 45.0

assert evaluators and budget_evaluator  # imported for their registrations


@dataclass
class EvaluationSummary:
    rules: int = 0
    fired: int = 0
    resolved: int = 0
    failed_rules: list[str] = field(default_factory=list)


@dataclass
class DeliverySummary:
    sent: int = 0
    retrying: int = 0
    failed: int = 0
    held_back: int = 0  # silenced, or the channel turned off
    next_attempt_at: datetime | None = None


# --- Rules ------------------------------------------------------------------------------


@transaction.atomic
def save_rule(rule: AlertRule) -> AlertRule:
    """Store the rule with only the thresholds its kind uses (the others are cleared, so
    a kind changed later does not keep a stale amount)."""
    used = set(rule.threshold_fields)
    for name in registry.THRESHOLD_FIELDS:
        if name not in used:
            setattr(rule, name, None)
    rule.save()
    return rule


@transaction.atomic
def delete_rule(rule: AlertRule, now=None) -> int:
    """Resolve the rule's firing alerts (their receivers are told), then delete it; the
    alerts stay in the history under the rule's name. Returns how many resolved."""
    now = now or timezone.now()
    rule = AlertRule.objects.select_for_update().get(pk=rule.pk)
    firing = list(rule.alerts.filter(status=Alert.Status.FIRING))
    silences = list(Silence.objects.active(now))
    for alert in firing:
        _resolve(alert, now, silences)
    rule.delete()
    if firing:
        enqueue("alerts.deliver")  # the resolved notifications go now, not at beat's tick
    return len(firing)


# --- Evaluation -------------------------------------------------------------------------


def evaluate_rules(now=None, *, rules=None) -> EvaluationSummary:
    """Evaluate every enabled rule (or ``rules``) at ``now``; resolve the firing alerts
    of rules that are off or gone."""
    now = now or timezone.now()
    summary = EvaluationSummary()
    silences = list(Silence.objects.active(now))
    queryset = AlertRule.objects.filter(enabled=True).select_related("channel")
    if rules is not None:
        queryset = queryset.filter(pk__in=[rule.pk for rule in rules])
    for rule in queryset.order_by("pk"):
        summary.rules += 1
        try:
            fired, resolved = evaluate_rule(rule, now, silences)
        except Exception as error:  # one broken rule must not stop the others
            logger.exception("alert rule %s failed to evaluate", rule.slug)
            _record_rule_error(rule, now, error)
            summary.failed_rules.append(rule.slug)
            continue
        summary.fired += fired
        summary.resolved += resolved
    if rules is None:
        summary.resolved += resolve_orphans(now, silences)
    return summary


def evaluate_rule(rule: AlertRule, now, silences=None) -> tuple[int, int]:
    """(alerts raised, alerts resolved) by one evaluation of ``rule``."""
    evaluator = rule.evaluator
    if evaluator is None:
        raise RuntimeError(registry.unavailable_reason(rule.kind))
    subjects = evaluator.evaluate(rule, now)
    silences = list(Silence.objects.active(now)) if silences is None else silences
    with transaction.atomic():
        # Holding the rule's row: a second evaluation at the same time waits, then finds
        # the alerts this one raised.
        rule = (
            AlertRule.objects.select_for_update(of=("self",))
            .select_related("channel", "team")
            .get(pk=rule.pk)
        )
        firing = {
            alert.fingerprint: alert for alert in rule.alerts.filter(status=Alert.Status.FIRING)
        }
        seen = set()
        fired = 0
        for subject in subjects:
            labels = alert_labels(rule, evaluator, subject)
            fingerprint = registry.fingerprint(
                {
                    name: value
                    for name, value in labels.items()
                    if name not in UNFINGERPRINTED_LABELS
                }
            )
            if fingerprint in seen:
                continue
            seen.add(fingerprint)
            if fingerprint not in firing:
                _raise(rule, evaluator, subject, labels, fingerprint, now, silences)
                fired += 1
        gone = [alert for fingerprint, alert in firing.items() if fingerprint not in seen]
        for alert in gone:
            _resolve(alert, now, silences)
        rule.last_evaluated_at, rule.last_error, rule.last_error_parts = now, "", []
        rule.save(update_fields=["last_evaluated_at", "last_error", "last_error_parts"])
    return fired, len(gone)


def alert_labels(rule, evaluator, subject) -> dict[str, str]:
    labels = {
        "alertname": rule.name,
        "rule": rule.slug,
        "kind": rule.kind,
        "severity": evaluator.severity,
    }
    if rule.team_id:
        labels["team"] = rule.team.slug
    labels.update(subject.labels)
    return labels


def resolve_orphans(now, silences) -> int:
    """Resolve the firing alerts whose rule is disabled or was deleted."""
    with transaction.atomic():
        orphans = list(
            Alert.objects.select_for_update(of=("self",))
            .filter(status=Alert.Status.FIRING)
            .filter(Q(rule__isnull=True) | Q(rule__enabled=False))
        )
        for alert in orphans:
            _resolve(alert, now, silences)
    return len(orphans)


def _record_rule_error(rule, now, error) -> None:
    message = sentence(
        gettext_noop(
            "The last evaluation failed (%(error)s): its alerts are kept as they were; the "
            "server log has the details."
        ),
        error=f"{type(error).__name__}: {error}",
    )
    AlertRule.objects.filter(pk=rule.pk).update(
        last_evaluated_at=now, last_error=str(message), last_error_parts=to_data(message)
    )


def _raise(rule, evaluator, subject, labels, fingerprint, now, silences) -> Alert:
    alert = Alert.objects.create(
        rule=rule,
        rule_name=rule.name,
        kind=rule.kind,
        severity=evaluator.severity,
        fingerprint=fingerprint,
        labels=labels,
        annotations={"summary": str(subject.summary), "description": str(subject.description)},
        annotation_parts={
            "summary": to_data(subject.summary),
            "description": to_data(subject.description),
        },
        team_id=subject.team_id,
        subject_url=subject.url,
        status=Alert.Status.FIRING,
        starts_at=now,
    )
    _make_delivery(alert, rule.channel, Delivery.Event.FIRING, now, silences, rule.team_id)
    return alert


def _resolve(alert: Alert, now, silences) -> None:
    alert.status, alert.ends_at = Alert.Status.RESOLVED, now
    alert.save(update_fields=["status", "ends_at"])
    for firing in alert.deliveries.filter(event=Delivery.Event.FIRING).select_related("channel"):
        if firing.status in (Delivery.Status.SILENCED, Delivery.Status.SUPPRESSED):
            _record_held_back(
                alert,
                firing.channel,
                Delivery.Event.RESOLVED,
                now,
                firing.status,
                sentence(gettext_noop("Its firing notification was not sent either.")),
            )
        else:
            _make_delivery(alert, firing.channel, Delivery.Event.RESOLVED, now, silences=())


def _make_delivery(alert, channel, event, now, silences, rule_team_id=None) -> Delivery:
    if not channel.enabled:
        return _record_held_back(
            alert, channel, event, now, Delivery.Status.SUPPRESSED, _channel_off(channel)
        )
    silence = next((s for s in silences if s.matches(alert, rule_team_id)), None)
    if silence is not None:
        return _record_held_back(
            alert, channel, event, now, Delivery.Status.SILENCED, _silenced_by(silence)
        )
    delivery, _created = Delivery.objects.get_or_create(
        alert=alert,
        channel=channel,
        event=event,
        defaults={
            "status": Delivery.Status.PENDING,
            "next_attempt_at": now,
            "payload": notify.payload_for(channel, notify.notice_of(alert, event)),
            "created_at": now,
        },
    )
    return delivery


def _record_held_back(alert, channel, event, now, status, reason: Sentence) -> Delivery:
    delivery, _created = Delivery.objects.get_or_create(
        alert=alert,
        channel=channel,
        event=event,
        defaults={
            "status": status,
            "last_error": str(reason),
            "last_error_parts": to_data(reason),
            "payload": notify.payload_for(channel, notify.notice_of(alert, event)),
            "created_at": now,
        },
    )
    return delivery


def _channel_off(channel) -> Sentence:
    return sentence(
        gettext_noop(
            "The channel %(channel)s is turned off: turn it on to send its notifications."
        ),
        channel=channel.name,
    )


def _silenced_by(silence) -> Sentence:
    return sentence(
        gettext_noop("Silenced by silence #%(id)s until %(until)s: %(comment)s"),
        id=silence.pk,
        until=f"{silence.ends_at:%Y-%m-%d %H:%M} UTC",
        comment=silence.comment,
    )


# --- Delivery ---------------------------------------------------------------------------


def retry_delay(attempts: int) -> timedelta:
    """The wait after the ``attempts``-th failed attempt: base × 2^(attempts − 1), capped."""
    base = settings.ALERT_RETRY_BASE_SECONDS
    seconds = min(settings.ALERT_RETRY_MAX_SECONDS, base * 2 ** max(0, attempts - 1))
    return timedelta(seconds=seconds)


def due_deliveries(now):
    """Deliveries whose next attempt has come, resolved ones only once their firing one
    is done."""
    firing_waits = Delivery.objects.filter(
        alert=OuterRef("alert"),
        channel=OuterRef("channel"),
        event=Delivery.Event.FIRING,
        status__in=Delivery.DUE_STATUSES,
    )
    return (
        Delivery.objects.filter(status__in=Delivery.DUE_STATUSES, next_attempt_at__lte=now)
        .exclude(Q(event=Delivery.Event.RESOLVED) & Exists(firing_waits))
        .select_related("channel", "alert__rule")
        .order_by("next_attempt_at", "pk")
    )


def deliver_due(now=None) -> DeliverySummary:
    """Send what is due at ``now`` (default: the time of each pass), pass after pass while
    a pass sends something (a resolved notification follows its firing one at once), for
    at most ``DELIVERY_TIME_BUDGET_SECONDS``."""
    summary = DeliverySummary()
    started = time.monotonic()
    # Channels that did not answer in this call: their other notifications wait for the
    # next call rather than each wait for the same timeout.
    unreachable: set[int] = set()
    while time.monotonic() - started < DELIVERY_TIME_BUDGET_SECONDS:
        moment = now or timezone.now()
        if not _delivery_pass(moment, summary, started, unreachable):
            break
    summary.next_attempt_at = (
        Delivery.objects.filter(status__in=Delivery.DUE_STATUSES)
        .order_by("next_attempt_at")
        .values_list("next_attempt_at", flat=True)
        .first()
    )
    return summary


def _delivery_pass(now, summary: DeliverySummary, started: float, unreachable: set) -> bool:
    """One pass over the due deliveries; True when one was sent."""
    silences = list(Silence.objects.active(now))
    sent_any = False
    for delivery in due_deliveries(now)[:DELIVERY_PASS_LIMIT]:
        if time.monotonic() - started > DELIVERY_TIME_BUDGET_SECONDS:
            break
        if delivery.channel_id in unreachable:
            continue
        status, outcome = attempt(delivery, now, silences)
        if outcome is not None and outcome.unreachable:
            unreachable.add(delivery.channel_id)
        if status == Delivery.Status.SENT:
            summary.sent += 1
            sent_any = True
        elif status == Delivery.Status.RETRYING:
            summary.retrying += 1
        elif status == Delivery.Status.FAILED:
            summary.failed += 1
        elif status is not None:
            summary.held_back += 1
    return sent_any


def _claim(delivery: Delivery, now) -> bool:
    claimed = Delivery.objects.filter(
        pk=delivery.pk,
        status__in=Delivery.DUE_STATUSES,
        next_attempt_at=delivery.next_attempt_at,
    ).update(next_attempt_at=now + CLAIM_LEASE)
    return bool(claimed)


def attempt(delivery: Delivery, now, silences=()) -> tuple[str | None, notify.Outcome | None]:
    """Try ``delivery`` once if it can be claimed: its status afterwards (None: another
    process has it) and the outcome of sending it (None: not sent)."""
    if not _claim(delivery, now):
        return None, None
    channel = delivery.channel
    held_back = None
    if not channel.enabled:
        held_back = (Delivery.Status.SUPPRESSED, _channel_off(channel))
    elif delivery.event == Delivery.Event.FIRING:
        rule_team_id = delivery.alert.rule.team_id if delivery.alert.rule_id else None
        silence = next((s for s in silences if s.matches(delivery.alert, rule_team_id)), None)
        if silence is not None:
            held_back = (Delivery.Status.SILENCED, _silenced_by(silence))
    if held_back:
        status, reason = held_back
        _save_outcome(delivery, status=status, error=reason, next_attempt_at=None)
        return status, None
    outcome = notify.send(channel, delivery.payload)
    attempts = delivery.attempts + 1
    if outcome.sent:
        _save_outcome(
            delivery,
            status=Delivery.Status.SENT,
            attempts=attempts,
            response_status=outcome.response_status,
            error=None,
            next_attempt_at=None,
            sent_at=now,
            last_attempt_at=now,
        )
        return Delivery.Status.SENT, outcome
    given_up = (
        attempts >= settings.ALERT_DELIVERY_MAX_ATTEMPTS
        or now - delivery.created_at >= timedelta(hours=settings.ALERT_DELIVERY_GIVE_UP_HOURS)
    )
    if outcome.retry and not given_up:
        _save_outcome(
            delivery,
            status=Delivery.Status.RETRYING,
            attempts=attempts,
            response_status=outcome.response_status,
            error=outcome.error,
            next_attempt_at=now + retry_delay(attempts),
            last_attempt_at=now,
        )
        return Delivery.Status.RETRYING, outcome
    error = outcome.error
    if outcome.retry:
        error = sentence(
            gettext_noop(
                "Gave up after %(attempts)s attempts over %(hours)s h; the last: %(error)s. Check "
                "that the receiver is up and the channel's settings are right (send a test "
                "notification from the channel's page), then send it again."
            ),
            attempts=attempts,
            hours=f"{(now - delivery.created_at).total_seconds() / 3600:.1f}",
            error=outcome.error,
        )
    _save_outcome(
        delivery,
        status=Delivery.Status.FAILED,
        attempts=attempts,
        response_status=outcome.response_status,
        error=error,
        next_attempt_at=None,
        last_attempt_at=now,
    )
    logger.warning("alert delivery %s failed: %s", delivery.pk, error)
    return Delivery.Status.FAILED, outcome


def _save_outcome(delivery: Delivery, *, error, **fields) -> None:
    fields["last_error"] = str(error) if error else ""
    fields["last_error_parts"] = to_data(error) if error else []
    for name, value in fields.items():
        setattr(delivery, name, value)
    Delivery.objects.filter(pk=delivery.pk).update(**fields)


def send_again(delivery: Delivery, now=None) -> Delivery:
    """A failed or held-back delivery goes out at the next pass, its attempts counted
    anew (someone fixed the receiver or lifted the silence)."""
    now = now or timezone.now()
    Delivery.objects.filter(pk=delivery.pk).update(
        status=Delivery.Status.PENDING,
        attempts=0,
        next_attempt_at=now,
        created_at=now,
        last_error="",
        last_error_parts=[],
    )
    enqueue("alerts.deliver")
    delivery.refresh_from_db()
    return delivery


def evaluate_and_deliver(now=None) -> tuple[EvaluationSummary, DeliverySummary]:
    """What beat runs every minute and ``manage.py evaluate_alerts`` once: evaluate, then
    send what the evaluation raised or resolved (and any retry that is due)."""
    evaluation = evaluate_rules(now)
    return evaluation, deliver_due()


# --- Test notifications -----------------------------------------------------------------


def send_test_notification(channel: AlertChannel, *, user=None, now=None) -> notify.Outcome:
    """A firing notification that no rule raised, sent at once and not retried: it shows
    the channel works (or why it does not)."""
    now = now or timezone.now()
    labels = {
        "alertname": "gpufleet test notification",
        "channel": channel.slug,
        "severity": "info",
    }
    summary = sentence(
        gettext_noop("A test notification from gpufleet: the channel %(channel)s works."),
        channel=channel.name,
    )
    description = sentence(
        gettext_noop("Sent from the channel's page by %(user)s. Nothing needs doing."),
        user=(user.get_username() if user else "gpufleet"),
    )
    notice = notify.Notice(
        status="firing",
        labels=labels,
        annotation_parts={"summary": to_data(summary), "description": to_data(description)},
        annotations={"summary": str(summary), "description": str(description)},
        starts_at=now,
        ends_at=None,
        fingerprint=registry.fingerprint(labels),
        alert_path=channel.get_absolute_url(),
        subject_path="",
        rule_name=gettext_noop("test notification"),
    )
    return notify.send(channel, notify.payload_for(channel, notice))
