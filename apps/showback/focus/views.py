"""The "Export FOCUS" download of the Reports and Showback pages: the range the page
shows, scoped to the reader's teams, as the API's ``/api/v1/exports/focus/`` writes it."""

from datetime import date

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.utils.translation import gettext
from django.views.decorators.http import require_GET

from apps.accounts.scope import scope_of
from apps.clusters.models import Cluster
from apps.reports.cost.periods import month_bounds
from apps.reports.span import ONE_DAY
from apps.showback.focus.api import MAX_DAYS, day_start
from apps.showback.focus.exports import focus_response
from apps.showback.focus.rows import MissingReportingRate, focus_rows
from apps.showback.months import not_a_month_sentence, parse_month


def _day(request, field: str) -> date | None:
    text = (request.GET.get(field) or "").strip()
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None


def _range(request):
    """(start, end) of the request's ``month=YYYY-MM``, or of ``start`` and ``end``
    (excluded) or ``through`` (included), as UTC instants; or (None, the error)."""
    if "month" in request.GET:
        month = parse_month(request.GET["month"], timezone.now())
        if month is None:
            return None, not_a_month_sentence(request.GET["month"])
        return month_bounds(month.date()), None
    start = _day(request, "start")
    if start is None:
        return None, gettext("Start: type the first day as 2026-10-01.")
    through = _day(request, "through")
    end = through + ONE_DAY if through else _day(request, "end")
    if end is None:
        return None, gettext("End: type the day after the range as 2026-11-01.")
    if end <= start:
        return None, gettext("End: the range must end after its start.")
    if (end - start).days > MAX_DAYS:
        return None, gettext("End: at most %(days)s days per export.") % {"days": MAX_DAYS}
    return (day_start(start), day_start(end)), None


@require_GET
def focus_export(request):
    """The FOCUS CSV of the range; a range it cannot read goes to the Showback page with
    the reason."""
    found, error = _range(request)
    if error:
        messages.error(request, error)
        return redirect("showback:showback")
    start, end = found
    cluster = request.GET.get("cluster") or None
    if cluster:
        get_object_or_404(Cluster, slug=cluster)
    try:
        rows = focus_rows(start, end, scope=scope_of(request.user), cluster=cluster)
    except MissingReportingRate as missing:
        messages.error(request, str(missing))
        return redirect("showback:showback")
    return focus_response(rows, start, end)
