"""What people rely on, against real peers on 127.0.0.1: an overdue restore drill and an
idle pool each reach a webhook (Alertmanager's JSON, version 4), a Slack-compatible chat
webhook and an SMTP server exactly once firing and once resolved, however many times the
rules are evaluated; a receiver that answers 500 first gets the notification again
after the backoff, and nothing twice.

Independent expectations: the Alertmanager payload's keys and values are written out
here as the Prometheus documentation gives them, not read from the code; the idle cost
in the annotation is recomputed from the hours written (8 GPUs × 25 h × $3 × 90 % idle).
"""

import re
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.alerts import services
from apps.alerts.models import Alert, Delivery
from tests.alerts.conftest import overdue_drill_policy, record_passed_drill, write_usage
from tests.alerts.factories import make_channel, make_rule
from tests.factories import PoolFactory

ALERTMANAGER_KEYS = {
    "receiver",
    "status",
    "alerts",
    "groupLabels",
    "commonLabels",
    "commonAnnotations",
    "externalURL",
    "version",
    "groupKey",
    "truncatedAlerts",
}
RULE_NAMES = {
    "drill-overdue-webhook": "Drill overdue webhook",
    "idle-pools-webhook": "Idle pools webhook",
}
ALERT_KEYS = {
    "status",
    "labels",
    "annotations",
    "startsAt",
    "endsAt",
    "generatorURL",
    "fingerprint",
}


@pytest.fixture
def fleet(gpu_model, hour_end, receiver, mailbox, settings, quick_retries):
    settings.SITE_URL = "https://gpufleet.example.com"
    idle_pool = PoolFactory(
        name="Idle H100",
        slug="idle-h100",
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=Decimal("3.00"),
        in_service_from=hour_end - timedelta(days=60),
    )
    write_usage(idle_pool, hours=48, busy_fraction=0.1, end=hour_end)
    drill_pool = PoolFactory(name="Drilled", slug="drilled", gpu_count=8)
    policy = overdue_drill_policy(drill_pool, name="Llama pretrain", slug="llama-pretrain")
    channels = {
        "webhook": make_channel("Pager bridge", kind="webhook", url=receiver.url("/webhook")),
        "slack": make_channel("Ops chat", kind="slack", url=receiver.url("/slack/T000/B000/XXX")),
        "email": make_channel(
            "On-call mail", kind="email", to="oncall@example.com, lead@example.com"
        ),
    }
    for key, channel in channels.items():
        make_rule(f"Drill overdue {key}", kind="drill_overdue", channel=channel)
        make_rule(
            f"Idle pools {key}",
            kind="idle_cost",
            channel=channel,
            threshold_usd=Decimal("300"),
            window_hours=24,
        )
    return {"idle_pool": idle_pool, "policy": policy, "channels": channels, "end": hour_end}


def _alertmanager_alerts(receiver, status=200):
    return [
        (body["status"], body["alerts"][0]["labels"]["rule"], body)
        for body in receiver.received("/webhook", status=status)
    ]


def _wait_for_retry_then_deliver():
    time.sleep(1.2)  # ALERT_RETRY_BASE_SECONDS = 1: the first retry is due after 1 s
    return services.deliver_due()


@pytest.mark.django_db
def test_an_overdue_drill_and_an_idle_pool_notify_once_firing_and_once_resolved(
    fleet, receiver, mailbox, capsys
):
    # The webhook's receiver is down for the first notification it is sent.
    receiver.answer("/webhook", 500)

    call_command("evaluate_alerts")
    output = capsys.readouterr().out
    assert "Evaluated 6 rule(s)" in output and "6 alert(s) fired, 0 resolved" in output
    assert "5 sent, 1 to retry" in output
    assert Alert.objects.filter(status="firing").count() == 6

    # The retry, after the backoff: the second request to the webhook is answered 200.
    assert _wait_for_retry_then_deliver().sent == 1
    refused = receiver.received("/webhook", status=500)
    assert len(refused) == 1
    retried = [body for body in receiver.received("/webhook", status=200) if body == refused[0]]
    assert len(retried) == 1, "the retry sends the very payload that was refused"

    # Evaluations while nothing changed notify nobody.
    for _ in range(3):
        call_command("evaluate_alerts")
    assert "0 alert(s) fired, 0 resolved" in capsys.readouterr().out
    assert len(receiver.received("/webhook", status=200)) == 2
    assert len(receiver.received("/slack/T000/B000/XXX")) == 2
    assert len(mailbox.messages) == 2

    # The drill is recorded and the pool gets busy: both resolve, once.
    record_passed_drill(fleet["policy"])
    write_usage(fleet["idle_pool"], hours=48, busy_fraction=0.95, end=fleet["end"])
    call_command("evaluate_alerts")
    call_command("evaluate_alerts")
    assert "0 alert(s) fired, 0 resolved" in capsys.readouterr().out.splitlines()[-2]

    # Webhook: one firing and one resolved per alert, as Alertmanager's JSON, version 4.
    delivered = _alertmanager_alerts(receiver)
    assert sorted((status, rule) for status, rule, _ in delivered) == [
        ("firing", "drill-overdue-webhook"),
        ("firing", "idle-pools-webhook"),
        ("resolved", "drill-overdue-webhook"),
        ("resolved", "idle-pools-webhook"),
    ]
    by_event = {(status, rule): body for status, rule, body in delivered}
    for rule in ("drill-overdue-webhook", "idle-pools-webhook"):
        firing, resolved = by_event[("firing", rule)], by_event[("resolved", rule)]
        for body in (firing, resolved):
            assert set(body) == ALERTMANAGER_KEYS
            assert body["version"] == "4" and body["truncatedAlerts"] == 0
            assert body["receiver"] == "Pager bridge"
            assert body["externalURL"] == "https://gpufleet.example.com"
            (alert,) = body["alerts"]
            assert set(alert) == ALERT_KEYS
            assert alert["status"] == body["status"]
            assert alert["labels"]["alertname"] == RULE_NAMES[alert["labels"]["rule"]]
            assert body["commonLabels"] == body["groupLabels"] == alert["labels"]
            assert body["commonAnnotations"] == alert["annotations"]
            assert re.fullmatch(r"[0-9a-f]{16}", alert["fingerprint"])
            assert alert["generatorURL"].startswith("https://gpufleet.example.com/alerts/")
        assert firing["alerts"][0]["endsAt"] == "0001-01-01T00:00:00Z"
        ended = datetime.fromisoformat(resolved["alerts"][0]["endsAt"].replace("Z", "+00:00"))
        started = datetime.fromisoformat(firing["alerts"][0]["startsAt"].replace("Z", "+00:00"))
        assert started < ended <= datetime.now(UTC)
        assert resolved["alerts"][0]["startsAt"] == firing["alerts"][0]["startsAt"]
        # The same alert: a receiver closes what it opened.
        assert firing["groupKey"] == resolved["groupKey"]
        assert firing["alerts"][0]["fingerprint"] == resolved["alerts"][0]["fingerprint"]

    idle = by_event[("firing", "idle-pools-webhook")]["alerts"][0]
    assert idle["labels"]["pool"] == "idle-h100" and idle["labels"]["kind"] == "idle_cost"
    # 8 GPUs × 24 hours (the last 24 hour-slots, the current one included) × $3.00
    # × (1 − 0.1) = $518.40.
    hand_idle_usd = 8 * 24 * 3.00 * (1 - 0.1)
    assert f"${hand_idle_usd:,.2f}" in idle["annotations"]["summary"]
    assert idle["annotations"]["url"] == "https://gpufleet.example.com/pools/idle-h100/"
    drill = by_event[("firing", "drill-overdue-webhook")]["alerts"][0]
    assert drill["labels"]["workload"] == "llama-pretrain"
    assert "Llama pretrain" in drill["annotations"]["summary"]

    # Chat: the same four events, text for every client and Slack's blocks.
    chat = receiver.received("/slack/T000/B000/XXX")
    assert len(chat) == 4
    texts = sorted(body["text"].splitlines()[0] for body in chat)
    assert [text.split("]")[0] for text in texts] == [
        "[FIRING",
        "[FIRING",
        "[RESOLVED",
        "[RESOLVED",
    ]
    assert any(f"${hand_idle_usd:,.2f}" in text for text in texts)
    for body in chat:
        assert [block["type"] for block in body["blocks"]] == ["section", "context"]
        assert "https://gpufleet.example.com/alerts/" in body["blocks"][1]["elements"][0]["text"]

    # Email: four messages to both addresses, subject saying the event.
    assert len(mailbox.messages) == 4
    assert all(
        sorted(recipients) == ["lead@example.com", "oncall@example.com"]
        for _sender, recipients in mailbox.envelopes
    )
    subjects = sorted(message["Subject"] for message in mailbox.messages)
    assert [subject.split("]")[0] for subject in subjects] == [
        "[FIRING",
        "[FIRING",
        "[RESOLVED",
        "[RESOLVED",
    ]
    body = next(m for m in mailbox.messages if "Idle H100" in m["Subject"]).get_content()
    assert "https://gpufleet.example.com/pools/idle-h100/" in body

    # The history: 12 deliveries, each sent once, the webhook's first after two attempts.
    deliveries = Delivery.objects.all()
    assert deliveries.count() == 12
    assert set(deliveries.values_list("status", flat=True)) == {"sent"}
    assert sorted(deliveries.values_list("attempts", flat=True)) == [1] * 11 + [2]


@pytest.mark.django_db
def test_a_resolved_notification_waits_for_its_firing_one(fleet, receiver):
    """A receiver down while an alert fires and resolves hears both, in order, once it is
    back: the resolved notification is not sent before the firing one got through."""
    receiver.answer("/webhook", *[503] * 20)
    services.evaluate_and_deliver()
    record_passed_drill(fleet["policy"])
    services.evaluate_and_deliver()
    firing = Delivery.objects.get(alert__rule__slug="drill-overdue-webhook", event="firing")
    resolved = Delivery.objects.get(alert__rule__slug="drill-overdue-webhook", event="resolved")
    assert (firing.status, resolved.status) == ("retrying", "pending")
    assert not [b for b in receiver.received("/webhook") if b["status"] == "resolved"]

    receiver.answer("/webhook")  # back up
    time.sleep(2.5)  # past the second retry's 2 s
    services.deliver_due()
    events = [
        body["status"]
        for body in receiver.received("/webhook", status=200)
        if body["alerts"][0]["labels"]["rule"] == "drill-overdue-webhook"
    ]
    assert events == ["firing", "resolved"]


@pytest.mark.django_db
def test_a_receiver_down_for_good_ends_failed_with_what_to_do(fleet, receiver, settings):
    settings.ALERT_DELIVERY_MAX_ATTEMPTS = 3
    receiver.answer("/webhook", *[500] * 10)
    services.evaluate_and_deliver()
    for _ in range(3):
        _wait_for_retry_then_deliver()
        time.sleep(1)
    failed = Delivery.objects.filter(channel__slug="pager-bridge", status="failed")
    assert failed.count() == 2
    delivery = failed.first()
    assert delivery.attempts == 3 and delivery.response_status == 500
    assert delivery.last_error.startswith("Gave up after 3 attempts")
    assert f"{receiver.base_url} answered HTTP 500: receiver is down for maintenance" in (
        delivery.last_error
    )
    assert "send a test notification" in delivery.last_error


@pytest.mark.django_db
def test_a_receiver_that_refuses_is_not_tried_again(fleet, receiver):
    receiver.answer("/webhook", 404, 404)
    services.evaluate_and_deliver()
    failed = Delivery.objects.filter(channel__slug="pager-bridge")
    assert set(failed.values_list("status", "attempts")) == {("failed", 1)}
    assert "refused the notification with HTTP 404" in failed.first().last_error
    assert len(receiver.received("/webhook")) == 2


@pytest.mark.django_db
def test_a_receiver_that_hangs_is_left_for_the_next_pass(fleet, receiver, settings):
    """No answer within the timeout: retried later, and the channel's other notification
    waits for the next pass instead of waiting for the same timeout again."""
    settings.ALERT_HTTP_TIMEOUT_SECONDS = 0.5
    receiver.delay_seconds["/webhook"] = 1.5
    started, tried_at = time.monotonic(), timezone.now()
    services.evaluate_and_deliver()
    assert time.monotonic() - started < 1.5 + 1.0
    webhook = Delivery.objects.filter(channel__slug="pager-bridge")
    statuses = sorted(webhook.values_list("status", "attempts"))
    assert statuses == [("pending", 0), ("retrying", 1)]
    retrying = webhook.get(status="retrying")
    assert "did not answer within 0.5 s" in retrying.last_error
    # Due a backoff after the attempt, whatever time the test took since.
    backoff = timedelta(seconds=settings.ALERT_RETRY_BASE_SECONDS)
    assert retrying.next_attempt_at - tried_at >= backoff


@pytest.mark.django_db
def test_recipients_the_mail_server_refuses_fail_at_once(fleet, mailbox):
    mailbox.refuse = {"oncall@example.com", "lead@example.com"}
    services.evaluate_and_deliver()
    mail = Delivery.objects.filter(channel__slug="on-call-mail")
    assert set(mail.values_list("status", flat=True)) == {"failed"}
    assert "refused the recipients lead@example.com, oncall@example.com" in mail.first().last_error
