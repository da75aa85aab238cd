"""Alert pages: the alerts (firing first, then the history), rules, channels, the
delivery history and silences. Everyone signed in reads what their scope holds; Ops
and Technical leads change rules and silences, Ops the channels (apps/core/roles.py).

Every object is looked up within the reader's scope (out of it: 404). A fleet-wide
object (no team) is changed only by those who may manage fleet-wide ones
(``forms.may_manage_fleet_wide``): a team member would otherwise widen what it reads.
"""

from datetime import timedelta
from functools import partial
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required, permission_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Case, Count, IntegerField, Max, Q, Value, When
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from prometheus_client import CONTENT_TYPE_LATEST

from apps.accounts.models import Team
from apps.accounts.scope import scope_of
from apps.alerts import services
from apps.alerts.forms import (
    AlertChannelForm,
    AlertRuleForm,
    SilenceForm,
    may_manage_fleet_wide,
)
from apps.alerts.metrics import access_status, exposition
from apps.alerts.models import (
    KIND_CHOICES,
    Alert,
    AlertChannel,
    AlertRule,
    Delivery,
    Silence,
    SlurmReportDelivery,
)
from apps.alerts.tables import AlertTable, ChannelTable, DeliveryTable, RuleTable, SilenceTable
from apps.core.crud import ObjectViews
from apps.core.htmx import render_page
from apps.core.tables import configure_table
from apps.core.texts import translated

RECENT_DELIVERIES = 20
SLURM_SENDS_PER_PAGE = 50


def _scope(request):
    return scope_of(request.user)


class TeamObjectViews(ObjectViews):
    """Rules, channels and silences: read within the reader's scope; a fleet-wide one (no
    team) changed only by those who may manage fleet-wide ones."""

    def objects(self, request):
        return self.model.objects.in_scope(_scope(request))

    def form_kwargs(self, request, parent):
        return {"user": request.user}

    def check(self, request, obj, *, action):
        if obj.team_id is None and not may_manage_fleet_wide(request.user):
            raise PermissionDenied(
                gettext(
                    "%(name)s is fleet-wide: administrators change it, as it reads or reaches "
                    "every team."
                )
                % {"name": obj.name}
            )


class RuleViews(TeamObjectViews):
    model = AlertRule
    name = "rule"
    noun = _("Rule")
    related = ("channel", "team", "pool", "workload")
    form = AlertRuleForm
    template = "alerts/rule_form.html"
    list_url = "alerts:rule_list"
    pretitle = _("Alert rules")

    def initial(self, request, parent):
        return {"window_hours": 24, "enabled": True}

    def delete_options(self, request, rule):
        return {"delete": partial(services.delete_rule, rule)}


class ChannelViews(TeamObjectViews):
    model = AlertChannel
    name = "channel"
    noun = _("Channel")
    related = ("team",)
    form = AlertChannelForm
    template = "alerts/channel_form.html"
    list_url = "alerts:channel_list"
    pretitle = _("Alert channels")

    def delete_options(self, request, channel):
        return {
            "blocking": list(channel.rules.order_by("name")),
            "blocking_label": gettext("alert rules"),
        }


class SilenceViews(TeamObjectViews):
    model = Silence
    lookup = {"pk": "pk"}


class AlertViews(TeamObjectViews):
    model = Alert
    lookup = {"pk": "pk"}
    related = ("rule",)


class DeliveryViews(TeamObjectViews):
    """A notification is sent again by those who may change its channel."""

    model = Delivery
    lookup = {"pk": "pk"}
    related = ("channel",)
    permissions = {"change": "alerts.change_alertchannel"}

    def objects(self, request):
        return deliveries_in_scope(_scope(request))

    def check(self, request, delivery, *, action):
        super().check(request, delivery.channel, action=action)


rule_views = RuleViews()
channel_views = ChannelViews()
silence_views = SilenceViews()
alert_views = AlertViews()
delivery_views = DeliveryViews()


def deliveries_in_scope(scope):
    return Delivery.objects.filter(scope.team_filter("alert__team")).filter(
        scope.team_filter("channel__team")
    )


# --- Alerts -----------------------------------------------------------------------------


@require_GET
def alert_list(request):
    """Firing alerts first, then the history, newest first; ``?status=`` and ``?kind=``
    filter."""
    alerts = Alert.objects.in_scope(_scope(request)).select_related("rule")
    status = request.GET.get("status") or ""
    if status in Alert.Status.values:
        alerts = alerts.filter(status=status)
    else:
        status = ""
    kind = request.GET.get("kind") or ""
    if kind in dict(KIND_CHOICES):
        alerts = alerts.filter(kind=kind)
    else:
        kind = ""
    alerts = alerts.annotate(
        firing_first=Case(
            When(status=Alert.Status.FIRING, then=Value(0)),
            default=Value(1),
            output_field=IntegerField(),
        )
    ).order_by("firing_first", "-starts_at", "-id")
    table = AlertTable(alerts)
    configure_table(request, table)
    context = {
        "table": table,
        "status": status,
        "kind": kind,
        "statuses": Alert.Status.choices,
        "kinds": KIND_CHOICES,
        "firing_count": Alert.objects.in_scope(_scope(request))
        .filter(status=Alert.Status.FIRING)
        .count(),
    }
    return render_page(request, "alerts/alert_list.html", context, fragments={"alerts": "alerts"})


@alert_views.object_view()
@require_GET
def alert_detail(request, alert):
    scope = _scope(request)
    rule_in_scope = (
        alert.rule_id and AlertRule.objects.in_scope(scope).filter(pk=alert.rule_id).exists()
    )
    deliveries = deliveries_in_scope(scope).filter(alert=alert).select_related("channel")
    return render_page(
        request,
        "alerts/alert_detail.html",
        {
            "alert": alert,
            "rule_in_scope": rule_in_scope,
            "deliveries": deliveries.order_by("created_at", "pk"),
            "labels": sorted(alert.labels.items()),
            "silence_query": urlencode(
                {"matchers": silence_matchers(alert)}
                | ({"team": alert.labels["team"]} if "team" in alert.labels else {})
            ),
        },
    )


def silence_matchers(alert) -> str:
    """The matchers of a silence of just this alert: its identifying labels."""
    return ", ".join(
        f"{name}={value}"
        for name, value in sorted(alert.labels.items())
        if name not in services.UNFINGERPRINTED_LABELS
    )


# --- Rules ------------------------------------------------------------------------------


@require_GET
def rule_list(request):
    rules = (
        AlertRule.objects.in_scope(_scope(request))
        .select_related("channel", "team", "pool", "workload")
        .annotate(firing_count=Count("alerts", filter=Q(alerts__status=Alert.Status.FIRING)))
    )
    table = RuleTable(rules)
    configure_table(request, table)
    return render_page(
        request, "alerts/rule_list.html", {"table": table}, fragments={"rules": "rules"}
    )


@rule_views.object_view()
@require_GET
def rule_detail(request, rule):
    scope = _scope(request)
    alerts = Alert.objects.in_scope(scope).filter(rule=rule)
    return render_page(
        request,
        "alerts/rule_detail.html",
        {
            "rule": rule,
            "firing": alerts.filter(status=Alert.Status.FIRING).order_by("-starts_at")[:50],
            "recent": alerts.filter(status=Alert.Status.RESOLVED).order_by("-ends_at")[:20],
            "may_change": may_manage_fleet_wide(request.user) or rule.team_id is not None,
        },
    )


rule_create = rule_views.create_view()
rule_edit = rule_views.edit_view()
rule_delete = rule_views.delete_view()


# --- Channels ---------------------------------------------------------------------------


@require_GET
def channel_list(request):
    channels = (
        AlertChannel.objects.in_scope(_scope(request))
        .select_related("team")
        .annotate(
            rule_count=Count("rules", distinct=True),
            last_sent_at=Max("deliveries__sent_at"),
        )
    )
    table = ChannelTable(channels)
    configure_table(request, table)
    return render_page(
        request, "alerts/channel_list.html", {"table": table}, fragments={"channels": "channels"}
    )


@channel_views.object_view()
@require_GET
def channel_detail(request, channel):
    scope = _scope(request)
    return render_page(
        request,
        "alerts/channel_detail.html",
        {
            "channel": channel,
            "rules": AlertRule.objects.in_scope(scope).filter(channel=channel).order_by("name"),
            "deliveries": deliveries_in_scope(scope)
            .filter(channel=channel)
            .select_related("alert")[:RECENT_DELIVERIES],
            "may_change": may_manage_fleet_wide(request.user) or channel.team_id is not None,
        },
    )


channel_create = channel_views.create_view()
channel_edit = channel_views.edit_view()
channel_delete = channel_views.delete_view()


@require_POST
@channel_views.object_view("change")
def channel_test(request, channel):
    """Send a test notification now and say how it went."""
    outcome = services.send_test_notification(channel, user=request.user)
    if outcome.sent:
        messages.success(
            request,
            gettext("A test notification went to %(channel)s.") % {"channel": channel.name},
        )
    else:
        messages.error(
            request,
            gettext("The test notification to %(channel)s was not delivered: %(error)s.")
            % {"channel": channel.name, "error": translated(outcome.error)},
        )
    return redirect(channel)


# --- Deliveries -------------------------------------------------------------------------


@require_GET
def delivery_list(request):
    """Every notification, newest first, with its attempts and last error; ``?status=``
    and ``?channel=`` filter."""
    scope = _scope(request)
    deliveries = deliveries_in_scope(scope).select_related("alert", "channel")
    status = request.GET.get("status") or ""
    if status in Delivery.Status.values:
        deliveries = deliveries.filter(status=status)
    else:
        status = ""
    channels = AlertChannel.objects.in_scope(scope).order_by("name")
    channel = channels.filter(slug=request.GET.get("channel") or "").first()
    if channel:
        deliveries = deliveries.filter(channel=channel)
    table = DeliveryTable(deliveries.order_by("-created_at", "-id"))
    configure_table(request, table)
    context = {
        "table": table,
        "status": status,
        "statuses": Delivery.Status.choices,
        "channels": channels,
        "channel": channel,
        "now": timezone.now(),
    }
    return render_page(
        request, "alerts/delivery_list.html", context, fragments={"deliveries": "deliveries"}
    )


@require_POST
@delivery_views.object_view("change")
def delivery_send_again(request, delivery):
    if delivery.is_due or delivery.status == Delivery.Status.SENT:
        messages.info(request, gettext("That notification is already sent or on its way."))
    else:
        services.send_again(delivery)
        messages.success(
            request,
            gettext("The notification to %(channel)s is sent again within a minute.")
            % {"channel": delivery.channel.name},
        )
    return redirect("alerts:delivery_list")


@permission_required("alerts.change_alertchannel", raise_exception=True)
@require_GET
def slurm_report_list(request):
    """The sends of the weekly Slurm efficiency report, newest week first: to whom, about
    whom, and how each went. Those who manage the channels read it (it names the users'
    addresses); ``?status=`` filters."""
    sends = SlurmReportDelivery.objects.select_related("channel", "team", "cluster")
    status = request.GET.get("status") or ""
    if status in SlurmReportDelivery.Status.values:
        sends = sends.filter(status=status)
    else:
        status = ""
    page = Paginator(
        sends.order_by("-week_start", "channel__name", "recipient", "pk"), SLURM_SENDS_PER_PAGE
    ).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "status": status,
        "statuses": SlurmReportDelivery.Status.choices,
        "query_without_page": urlencode({"status": status}) if status else "",
    }
    return render_page(request, "alerts/slurm_report_list.html", context)


# --- Silences ---------------------------------------------------------------------------


@require_GET
def silence_list(request):
    now = timezone.now()
    silences = (
        Silence.objects.in_scope(_scope(request))
        .select_related("rule", "team", "created_by")
        .annotate(
            active_first=Case(
                When(starts_at__lte=now, ends_at__gt=now, then=Value(0)),
                When(starts_at__gt=now, then=Value(1)),
                default=Value(2),
                output_field=IntegerField(),
            )
        )
        .order_by("active_first", "-ends_at", "-id")
    )
    table = SilenceTable(silences)
    configure_table(request, table)
    return render_page(
        request,
        "alerts/silence_list.html",
        {"table": table, "now": now, "may_manage_fleet_wide": may_manage_fleet_wide(request.user)},
        fragments={"silences": "silences"},
    )


@permission_required("alerts.add_silence", raise_exception=True)
@require_http_methods(["GET", "POST"])
def silence_create(request):
    now = timezone.now()
    initial = {"starts_at": now, "ends_at": now + timedelta(hours=2)}
    rule = (
        AlertRule.objects.in_scope(_scope(request))
        .filter(slug=request.GET.get("rule") or "")
        .first()
    )
    if rule:
        initial["rule"] = rule.pk
    matchers = request.GET.get("matchers")
    if matchers:
        initial["matchers_text"] = matchers
    team = Team.objects.filter(slug=request.GET.get("team") or "").first()
    if team:
        initial["team"] = team.pk
    form = SilenceForm(request.POST or None, initial=initial, user=request.user)
    if request.method == "POST" and form.is_valid():
        silence = form.save(commit=False)
        silence.created_by = request.user
        silence.save()
        messages.success(
            request,
            gettext("Silence #%(id)s holds back notifications until %(until)s.")
            % {"id": silence.pk, "until": f"{silence.ends_at:%Y-%m-%d %H:%M}"},
        )
        return redirect("alerts:silence_list")
    return render_page(request, "alerts/silence_form.html", {"form": form})


@require_POST
@silence_views.object_view("change")
def silence_expire(request, silence):
    now = timezone.now()
    if silence.ends_at > now:
        silence.ends_at = max(now, silence.starts_at)
        silence.save(update_fields=["ends_at"])
        messages.success(
            request,
            gettext("Silence #%(id)s has expired: notifications go out again.")
            % {"id": silence.pk},
        )
    return redirect("alerts:silence_list")


# --- /metrics ---------------------------------------------------------------------------


@login_not_required
@require_GET
def metrics(request):
    """Prometheus text for a scraper holding the token or coming from an allowed address
    (apps/alerts/metrics.py); 404 while neither is configured."""
    status = access_status(request)
    if status == 404:
        raise Http404("metrics are not configured")
    if status == 401:
        response = HttpResponse(
            "Send Authorization: Bearer <METRICS_TOKEN>.\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = 'Bearer realm="gpufleet metrics"'
        return response
    if status == 403:
        return HttpResponse(
            "This address is not in METRICS_ALLOWED_ADDRESSES.\n",
            status=403,
            content_type="text/plain",
        )
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
