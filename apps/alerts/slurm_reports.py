"""The weekly Slurm GPU efficiency report (apps/slurm/efficiency.py) sent through the
alert channels: an email to each Slurm user of each cluster with an address, and a
message to each team's channels.

A Slurm user is a cluster's: ``alice`` of two clusters gets an email per cluster, each
with that cluster's figures. The address is the name's: a gpufleet user's ``username``
(their ``email`` is used when set), else, with ``SLURM_EMAIL_DOMAIN``, ``<name>@<domain>``;
a user with neither gets no email.
A team's message goes to every enabled channel of the team: chat (``slack``) gets its
text, a webhook a JSON document of the figures, an email channel the text by email.
Sending never raises: ``Delivery`` lists what was sent and what failed, and why.

Each send is recorded (``SlurmReportDelivery``, unique per week, channel and recipient)
before it goes, and locked while it goes: a retried or re-run task for the same week
skips what was sent and what another run is sending, and tries again what failed."""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.urls import reverse
from django.utils import translation
from django.utils.http import urlencode
from django.utils.translation import gettext

from apps.alerts.models import AlertChannel, SlurmReportDelivery
from apps.alerts.notify import Outcome, post_json, send_email, site_url
from apps.core.money import to_cents
from apps.slurm.efficiency import Efficiency, Figures, JobEfficiency, job_efficiency

# The jobs each message lists: the largest idle allocations.
JOBS_LISTED = 10
WEBHOOK_KIND = "gpufleet.slurm_efficiency_report"


@dataclass
class Delivery:
    sent: list[str] = field(default_factory=list)  # "alice@example.com", "channel ops"
    failed: list[str] = field(default_factory=list)  # "… : why"
    no_address: list[str] = field(default_factory=list)  # Slurm users without one
    # Sent by an earlier run for the week, or being sent by another run now.
    skipped: list[str] = field(default_factory=list)
    # A failure that a later attempt may mend (a receiver or mail server not answering).
    retryable: bool = False


def address_of(slurm_user: str, users_by_name: dict) -> str:
    user = users_by_name.get(slurm_user)
    if user is not None and user.email:
        return user.email
    domain = settings.SLURM_EMAIL_DOMAIN.strip().lstrip("@")
    return f"{slurm_user}@{domain}" if slurm_user and domain else ""


def _hours(value) -> str:
    return f"{value:,.2f} GPU-h"


def _usd(value) -> str:
    return f"${to_cents(value):,}"


def _ratio(figures: Figures) -> str:
    ratio = figures.busy_ratio
    return "—" if ratio is None else f"{ratio * 100:.1f} %"


def report_url(week: date, **query) -> str:
    return site_url(reverse("slurm:efficiency")) + "?" + urlencode({"week": week, **query})


def _summary_lines(figures: Figures) -> list[str]:
    return [
        gettext("Allocated: %(hours)s") % {"hours": _hours(figures.allocated)},
        gettext("Busy: %(hours)s (%(ratio)s of the measured GPU-hours)")
        % {"hours": _hours(figures.busy), "ratio": _ratio(figures)},
        gettext("Idle: %(hours)s, costing %(cost)s")
        % {"hours": _hours(figures.idle), "cost": _usd(figures.idle_cost_usd)},
        gettext("Unmeasured (no telemetry from the nodes): %(hours)s")
        % {"hours": _hours(figures.unmeasured)},
    ]


def _job_lines(jobs: list[JobEfficiency]) -> list[str]:
    ranked = [job for job in jobs if job.figures.idle > 0][:JOBS_LISTED]
    if not ranked:
        return []
    lines = ["", gettext("Largest idle allocations:")]
    for job in ranked:
        unused = " " + gettext("(under 1 percent all along)") if job.stayed_unused else ""
        lines.append(
            f"- {job.job_id} ({job.cluster}, {job.job_name or '—'}, {job.gpus} GPU): "
            + gettext("idle %(hours)s, %(cost)s")
            % {"hours": _hours(job.figures.idle), "cost": _usd(job.figures.idle_cost_usd)}
            + unused
        )
    return lines


def _explanation() -> list[str]:
    return [
        "",
        gettext(
            "How it is computed: hour by hour, each GPU of your job's nodes that reported a "
            "utilisation holds an equal share of the job's allocated GPU-hours; busy = share "
            "× utilisation, idle = allocated − busy, priced at the pool's price per GPU-hour "
            "in force. Hours without telemetry are unmeasured, neither busy nor idle."
        ),
    ]


def _week_text(report: Efficiency) -> str:
    last = (report.end - timedelta(days=1)).date()
    return f"{report.start:%Y-%m-%d} – {last:%Y-%m-%d}"


def user_message(report: Efficiency, user_key: tuple[int, str]) -> tuple[str, str]:
    """(subject, body) of the email of the Slurm user ``user_key``: (cluster id, name)."""
    figures = report.by_user[user_key]
    cluster = report.cluster_names[user_key[0]]
    jobs = [job for job in report.ranked_jobs() if job.user_key == user_key]
    subject = gettext(
        "Your Slurm GPU efficiency on %(cluster)s, week of %(week)s: %(idle)s idle"
    ) % {
        "cluster": cluster,
        "week": f"{report.start:%Y-%m-%d}",
        "idle": _hours(figures.idle),
    }
    lines = [
        gettext("Slurm user %(user)s of cluster %(cluster)s, week %(week)s (UTC):")
        % {"user": user_key[1], "cluster": cluster, "week": _week_text(report)},
        "",
        *_summary_lines(figures),
        *_job_lines(jobs),
        *_explanation(),
        "",
        gettext("The report: %(url)s") % {"url": report_url(report.start.date())},
        "",
        "-- ",
        "gpufleet",
    ]
    return subject, "\n".join(lines)


def team_message(report: Efficiency, team) -> tuple[str, str]:
    figures = report.by_team[team.pk]
    jobs = [job for job in report.ranked_jobs() if job.team_id == team.pk]
    # The cluster after each name: a name of two clusters is two users.
    users = [
        f"{name} ({report.cluster_names[cluster_id]})"
        for cluster_id, name in sorted(
            {job.user_key for job in jobs},
            key=lambda key: (-report.by_user[key].idle_cost_usd, key[1], key[0]),
        )
    ]
    subject = gettext("Slurm GPU efficiency of %(team)s, week of %(week)s: %(idle)s idle") % {
        "team": team.name,
        "week": f"{report.start:%Y-%m-%d}",
        "idle": _hours(figures.idle),
    }
    lines = [
        gettext("Team %(team)s, week %(week)s (UTC):")
        % {"team": team.name, "week": _week_text(report)},
        "",
        *_summary_lines(figures),
        gettext("Users: %(users)s") % {"users": ", ".join(users)},
        *_job_lines(jobs),
        *_explanation(),
        "",
        gettext("The report: %(url)s") % {"url": report_url(report.start.date(), group="team")},
    ]
    return subject, "\n".join(lines)


def webhook_document(report: Efficiency, team) -> dict:
    """The JSON a team's webhook channel is posted: amounts as decimal strings."""
    figures = report.by_team[team.pk]
    jobs = [job for job in report.ranked_jobs() if job.team_id == team.pk]

    def shown(values: dict) -> dict:
        return {
            name: None if value is None else str(value)
            for name, value in values.items()
            if name != "jobs"
        }

    return {
        "kind": WEBHOOK_KIND,
        "week_start": f"{report.start:%Y-%m-%d}",
        "week_end": f"{report.end:%Y-%m-%d}",
        "team": {"slug": team.slug, "name": team.name},
        "jobs": figures.jobs,
        **shown(figures.shown()),
        "largest_idle_jobs": [
            {
                "job_id": job.job_id,
                "cluster": job.cluster,
                "user": job.user,
                "stayed_under_1_percent": job.stayed_unused,
                **shown(job.figures.shown()),
            }
            for job in jobs[:JOBS_LISTED]
        ],
        "url": report_url(report.start.date(), group="team"),
    }


def _outcome(delivery: Delivery, what: str, outcome) -> None:
    if outcome.sent:
        delivery.sent.append(what)
    else:
        delivery.failed.append(f"{what}: {outcome.error}")
        delivery.retryable = delivery.retryable or outcome.retry


def _send_once(
    delivery: Delivery,
    what: str,
    send: Callable[[], Outcome],
    *,
    week: date,
    channel=None,
    recipient: str,
    team=None,
    slurm_user: str = "",
    cluster_id: int | None = None,
) -> None:
    """``send()`` unless this week's send to ``channel`` and ``recipient`` (of the Slurm
    user's cluster) was made, or is being made by another run; recorded either way."""
    record, _ = SlurmReportDelivery.objects.get_or_create(
        week_start=week,
        channel=channel,
        recipient=recipient,
        cluster_id=cluster_id,
        defaults={"team": team, "slurm_user": slurm_user},
    )
    with transaction.atomic():
        # Held while it is sent: a run at the same time skips it rather than send it too.
        record = (
            SlurmReportDelivery.objects.select_for_update(skip_locked=True)
            .filter(pk=record.pk)
            .first()
        )
        if record is None or record.status == SlurmReportDelivery.Status.SENT:
            delivery.skipped.append(what)
            return
        outcome = send()
        record.record(outcome)
    _outcome(delivery, what, outcome)


def _channel_outcome(channel, report: Efficiency) -> Outcome:
    with translation.override(channel.language):
        subject, body = team_message(report, channel.team)
        if channel.kind == AlertChannel.Kind.SLACK:
            return post_json(channel.url, {"text": f"*{subject}*\n{body}"})
        if channel.kind == AlertChannel.Kind.WEBHOOK:
            return post_json(channel.url, webhook_document(report, channel.team))
        return send_email({"to": channel.addresses, "subject": subject, "body": body})


def _user_outcome(report: Efficiency, user_key: tuple[int, str], address: str) -> Outcome:
    with translation.override(settings.LANGUAGE_CODE):
        subject, body = user_message(report, user_key)
    return send_email({"to": [address], "subject": subject, "body": body})


def send_weekly_efficiency(week: date) -> Delivery:
    """Send the report of the week that starts on ``week``'s Monday (UTC): what this
    week's earlier runs sent is not sent again."""
    from apps.accounts.models import Team
    from apps.slurm.efficiency import week_start

    monday = week_start(week)
    start = datetime.combine(monday, time(0), tzinfo=UTC)
    report = job_efficiency(start, start + timedelta(days=7))
    delivery = Delivery()
    keys = sorted(
        (key for key in report.by_user if key[1]),
        key=lambda key: (key[1], report.cluster_names[key[0]]),
    )
    names = {name for _, name in keys}
    users_by_name = {
        user.username: user for user in get_user_model().objects.filter(username__in=names)
    }
    for cluster_id, name in keys:
        address = address_of(name, users_by_name)
        if not address:
            if name not in delivery.no_address:
                delivery.no_address.append(name)
            continue
        _send_once(
            delivery,
            address,
            lambda key=(cluster_id, name), address=address: _user_outcome(report, key, address),
            week=monday,
            recipient=address,
            slurm_user=name,
            cluster_id=cluster_id,
        )
    teams = Team.objects.filter(pk__in=[key for key in report.by_team if key is not None])
    channels = AlertChannel.objects.filter(team__in=teams, enabled=True).select_related("team")
    for channel in channels:
        _send_once(
            delivery,
            gettext("channel %(name)s") % {"name": channel.name},
            lambda channel=channel: _channel_outcome(channel, report),
            week=monday,
            channel=channel,
            recipient=channel.slug,
            team=channel.team,
        )
    return delivery


def last_week(today: date) -> date:
    """The Monday of the week before ``today``'s."""
    return today - timedelta(days=today.weekday() + 7)
