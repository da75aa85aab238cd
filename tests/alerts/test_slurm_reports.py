"""The weekly Slurm efficiency report reaches a real SMTP server and HTTP receiver: an
email per Slurm user with an address, a message per team channel. Figures from
tests/slurm/efficiency_data.py, by hand."""

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.urls import reverse

from apps.alerts.models import SlurmReportDelivery
from apps.alerts.slurm_reports import WEBHOOK_KIND, last_week, send_weekly_efficiency
from apps.alerts.tasks import send_slurm_efficiency_task
from tests.alerts.factories import make_channel
from tests.factories import UserFactory
from tests.slurm.efficiency_data import build_two_clusters, build_week

pytestmark = pytest.mark.django_db

CENT = Decimal("0.01")


def test_users_and_team_channels_get_the_week(mailbox, receiver, settings):
    week = build_week()
    settings.SLURM_EMAIL_DOMAIN = "hpc.example"
    UserFactory(username="alice", email="alice@lab.example")
    make_channel("vision-chat", kind="slack", url=receiver.url("/chat"), team=week["team"])
    make_channel("vision-hook", kind="webhook", url=receiver.url("/hook"), team=week["team"])
    make_channel("fleet-hook", kind="webhook", url=receiver.url("/fleet"))

    delivery = send_weekly_efficiency(date(2026, 12, 3))

    assert delivery.failed == [] and delivery.no_address == []
    alice_cost = (Decimal("1.45") * week["price_a"]).quantize(CENT)
    bob_cost = (Decimal("0.995") * week["price_spare"]).quantize(CENT)
    by_address = {envelope[1][0]: message for envelope, message in zip(
        mailbox.envelopes, mailbox.messages, strict=True
    )}  # fmt: skip
    # alice's gpufleet address; bob has no gpufleet user: the domain gives his.
    assert sorted(by_address) == ["alice@lab.example", "bob@hpc.example"]
    alice = by_address["alice@lab.example"]
    assert (
        alice["Subject"]
        == "Your Slurm GPU efficiency on Hopper, week of 2026-11-30: 1.45 GPU-h idle"
    )
    body = alice.get_content()
    assert "Allocated: 5.00 GPU-h" in body
    assert "Busy: 1.55 GPU-h (51.7 % of the measured GPU-hours)" in body  # 1.55 ÷ 3
    assert f"Idle: 1.45 GPU-h, costing ${alice_cost}" in body
    assert "Unmeasured (no telemetry from the nodes): 2.00 GPU-h" in body
    assert "- 500 (Hopper, —, 2 GPU): idle 1.45 GPU-h" in body
    assert "How it is computed" in body and "/slurm/efficiency/?week=2026-11-30" in body
    bob = by_address["bob@hpc.example"].get_content()
    assert f"${bob_cost}" in bob and "(under 1 percent all along)" in bob

    chat = receiver.received("/chat")
    assert len(chat) == 1
    assert chat[0]["text"].startswith("*Slurm GPU efficiency of Vision, week of 2026-11-30")
    assert "Users: alice (Hopper)" in chat[0]["text"]
    (hook,) = receiver.received("/hook")
    assert hook["kind"] == WEBHOOK_KIND
    assert (hook["week_start"], hook["week_end"], hook["team"]["name"]) == (
        "2026-11-30",
        "2026-12-07",
        "Vision",
    )
    assert (hook["jobs"], hook["allocated_gpu_hours"], hook["idle_gpu_hours"]) == (
        2,
        "5.000000",
        "1.450000",
    )
    assert hook["idle_cost_usd"] == str(alice_cost)
    assert [job["job_id"] for job in hook["largest_idle_jobs"]] == ["500", "502"]
    # A fleet-wide channel belongs to no team: it gets no team's message.
    assert receiver.received("/fleet") == []
    assert sorted(delivery.sent) == sorted(
        ["alice@lab.example", "bob@hpc.example", "channel vision-chat", "channel vision-hook"]
    )


def test_without_a_domain_a_user_unknown_to_gpufleet_gets_no_email(mailbox, settings, monkeypatch):
    build_week()
    settings.SLURM_EMAIL_DOMAIN = ""
    delivery = send_weekly_efficiency(date(2026, 11, 30))
    assert sorted(delivery.no_address) == ["alice", "bob"]
    assert mailbox.messages == []
    assert last_week(date(2026, 12, 7)) == date(2026, 11, 30)
    # Beat's Monday task sends last week: with alice a gpufleet user now, one email.
    UserFactory(username="alice", email="alice@lab.example")
    monday = datetime(2026, 12, 7, 6, tzinfo=UTC)
    monkeypatch.setattr("django.utils.timezone.now", lambda: monday)
    entry = settings.CELERY_BEAT_SCHEDULE["send-slurm-efficiency-reports"]
    assert entry["task"] == send_slurm_efficiency_task.name
    assert send_slurm_efficiency_task() == 1
    assert mailbox.envelopes[0][1] == ["alice@lab.example"]
    assert last_week(date(2026, 12, 13)) == date(2026, 11, 30)


def test_each_cluster_s_alice_gets_her_own_email(mailbox, receiver, settings):
    """A Slurm user is a cluster's: alice of Hopper and alice of Ampere each get the
    figures of their own cluster (tests/slurm/efficiency_data.py, by hand)."""
    fleet = build_two_clusters()
    settings.SLURM_EMAIL_DOMAIN = "hpc.example"
    make_channel("vision-chat", kind="slack", url=receiver.url("/chat"), team=fleet.team)
    delivery = send_weekly_efficiency(date(2026, 11, 30))
    assert delivery.failed == []
    sent = sorted(
        (envelope[1][0], message["Subject"], message.get_content())
        for envelope, message in zip(mailbox.envelopes, mailbox.messages, strict=True)
    )
    week = "week of 2026-11-30"
    assert [(address, subject) for address, subject, _ in sent] == [
        ("alice@hpc.example", f"Your Slurm GPU efficiency on Ampere, {week}: 0.90 GPU-h idle"),
        ("alice@hpc.example", f"Your Slurm GPU efficiency on Hopper, {week}: 0.40 GPU-h idle"),
        ("bob@hpc.example", f"Your Slurm GPU efficiency on Ampere, {week}: 0.90 GPU-h idle"),
        ("carol@hpc.example", f"Your Slurm GPU efficiency on Volta, {week}: 0.00 GPU-h idle"),
    ]
    hopper = sent[1][2]
    assert "Slurm user alice of cluster Hopper" in hopper
    assert "Allocated: 1.00 GPU-h" in hopper and "- 1 (Hopper, —, 1 GPU)" in hopper
    assert "Ampere" not in hopper
    (chat,) = receiver.received("/chat")
    # Vision's users, the largest idle cost first.
    costs = {
        "alice (Hopper)": Decimal("0.4") * fleet.hopper_price,
        "alice (Ampere)": Decimal("0.9") * fleet.ampere_price,
    }
    assert costs["alice (Hopper)"] != costs["alice (Ampere)"]
    users = ", ".join(sorted(costs, key=lambda name: -costs[name]))
    assert f"Users: {users}" in chat["text"]
    # One address, two clusters: two sends recorded, and neither made twice by a re-run.
    alice_sends = SlurmReportDelivery.objects.filter(recipient="alice@hpc.example")
    assert sorted(alice_sends.values_list("cluster__name", "status")) == [
        ("Ampere", "sent"),
        ("Hopper", "sent"),
    ]
    again = send_weekly_efficiency(date(2026, 11, 30))
    assert again.sent == [] and len(mailbox.messages) == len(sent)


def _sends():
    return {
        (send.channel.slug if send.channel else send.recipient): (
            send.status,
            send.attempts,
            send.slurm_user,
            send.team.name if send.team else None,
        )
        for send in SlurmReportDelivery.objects.select_related("channel", "team")
    }


def test_running_the_same_week_again_sends_nothing_twice(mailbox, receiver, settings):
    week = build_week()
    settings.SLURM_EMAIL_DOMAIN = "hpc.example"
    UserFactory(username="alice", email="alice@lab.example")
    make_channel("vision-chat", kind="slack", url=receiver.url("/chat"), team=week["team"])
    make_channel("vision-hook", kind="webhook", url=receiver.url("/hook"), team=week["team"])

    first = send_weekly_efficiency(date(2026, 12, 3))
    again = send_weekly_efficiency(date(2026, 11, 30))  # another day of the same week

    assert len(first.sent) == 4 and first.skipped == []
    assert again.sent == [] and again.failed == []
    assert sorted(again.skipped) == sorted(first.sent)
    assert len(mailbox.messages) == 2
    assert (len(receiver.received("/chat")), len(receiver.received("/hook"))) == (1, 1)
    assert _sends() == {
        "alice@lab.example": ("sent", 1, "alice", None),
        "bob@hpc.example": ("sent", 1, "bob", None),
        "vision-chat": ("sent", 1, "", "Vision"),
        "vision-hook": ("sent", 1, "", "Vision"),
    }
    assert set(SlurmReportDelivery.objects.values_list("week_start", flat=True)) == {
        date(2026, 11, 30)
    }
    # The next week is another week: sent again.
    assert send_weekly_efficiency(date(2026, 12, 7)).skipped == []


def test_a_failed_send_is_recorded_with_its_sentence_and_tried_again_by_the_next_run(
    mailbox, receiver, settings, client, make_user
):
    week = build_week()
    settings.SLURM_EMAIL_DOMAIN = "hpc.example"
    make_channel("vision-hook", kind="webhook", url=receiver.url("/hook"), team=week["team"])
    receiver.answer("/hook", 503)
    mailbox.refuse.add("bob@hpc.example")

    first = send_weekly_efficiency(date(2026, 11, 30))

    assert first.sent == ["alice@hpc.example"] and first.retryable
    hook_sentence = f"{receiver.base_url} answered HTTP 503: receiver is down for maintenance"
    assert sorted(first.failed) == sorted(
        [
            f"channel vision-hook: {hook_sentence}",
            f"bob@hpc.example: the mail server 127.0.0.1:{settings.EMAIL_PORT} refused the "
            "recipients bob@hpc.example: check the channel's addresses",
        ]
    )
    hook = SlurmReportDelivery.objects.get(channel__slug="vision-hook")
    assert (hook.status, hook.attempts, hook.error, hook.sent_at) == (
        "failed",
        1,
        hook_sentence,
        None,
    )

    client.force_login(make_user("ops"))
    page = client.get(reverse("alerts:slurm_report_list")).content.decode()
    assert hook_sentence in page and "alice@hpc.example" in page
    failed_only = client.get(reverse("alerts:slurm_report_list"), {"status": "failed"})
    assert "alice@hpc.example" not in failed_only.content.decode()

    # The receiver is back (its queued 503 answered), bob's mailbox exists now.
    mailbox.refuse.clear()
    second = send_weekly_efficiency(date(2026, 11, 30))
    assert sorted(second.sent) == ["bob@hpc.example", "channel vision-hook"]
    assert second.skipped == ["alice@hpc.example"] and second.failed == []
    assert [envelope[1] for envelope in mailbox.envelopes] == [
        ["alice@hpc.example"],
        ["bob@hpc.example"],
    ]
    assert [request.status for request in receiver.requests] == [503, 200]
    hook.refresh_from_db()
    assert (hook.status, hook.attempts, hook.error) == ("sent", 2, "")


def test_the_task_retries_the_week_whose_receiver_did_not_answer(mailbox, receiver, settings):
    """Run as a worker runs it (eagerly here): the retry, for the same week, sends only
    the webhook that failed."""
    week = build_week()
    settings.SLURM_EMAIL_DOMAIN = "hpc.example"
    make_channel("vision-hook", kind="webhook", url=receiver.url("/hook"), team=week["team"])
    receiver.answer("/hook", 503)
    send_slurm_efficiency_task.apply(kwargs={"week": "2026-12-02"}, throw=False)
    assert [request.status for request in receiver.requests] == [503, 200]
    assert len(mailbox.messages) == 2
    assert SlurmReportDelivery.objects.get(channel__slug="vision-hook").attempts == 2


def test_only_those_who_manage_channels_read_the_sends(client, make_user):
    url = reverse("alerts:slurm_report_list")
    client.force_login(make_user("reader"))
    assert client.get(url).status_code == 403
    client.force_login(make_user("ops"))
    page = client.get(url).content.decode()
    assert "No weekly report sent yet" in page
    efficiency = client.get(reverse("slurm:efficiency")).content.decode()
    assert 'id="efficiency-sends"' in efficiency
