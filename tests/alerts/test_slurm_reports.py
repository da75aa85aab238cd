"""The weekly Slurm efficiency report reaches a real SMTP server and HTTP receiver: an
email per Slurm user with an address, a message per team channel. Figures from
tests/slurm/efficiency_data.py, by hand."""

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

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
