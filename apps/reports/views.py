"""The Overview, the reports page (filters through htmx, CSV/XLSX export, a recompute
job with progress) and the interruptions of training jobs."""

import logging
import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.contrib.auth.models import AnonymousUser
from django.core.paginator import Paginator
from django.db import transaction
from django.http import HttpRequest, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.backups.services import overdue_and_failing_summary
from apps.core.charts import freeze_figure
from apps.core.crud import delete_page, form_page
from apps.core.history import history_rows
from apps.core.htmx import fragment_for, render_page
from apps.core.outbox import enqueue, mark_waiting
from apps.core.runs import interrupted_sentence
from apps.pools.charts import build_gpus_by_purpose_figure
from apps.pools.models import Interruption, Pool, Purpose
from apps.reports import charts, costmodel, explain, exports, queries
from apps.reports.cache import (
    WARM_BUDGET_SECONDS,
    background_attempts,
    background_heartbeat,
    background_job_stalled,
    background_progress,
    cached,
    cached_value,
    forget_background_job,
    recent_views,
    record_background_heartbeat,
    remember_view,
    retry_background_job,
    set_background_progress,
    start_background_job,
    workers_run_warm_ups,
)
from apps.reports.forms import SYNC_RECOMPUTE_DAYS, InterruptionForm, ReportFilterForm
from apps.reports.models import RecomputeJob
from apps.reports.tasks import compute_report_task, recompute_days_task

logger = logging.getLogger(__name__)

OVERVIEW_CURVE_DAYS = 28


def _overview_context(now):
    month_start = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    month_rows = queries.cost_report(month_start, now, "purpose")
    month = queries.total_row(month_rows)
    curve_start = now - timedelta(days=OVERVIEW_CURVE_DAYS)
    zone_name = "UTC"
    zone = ZoneInfo(zone_name)
    split = queries.daily_split(curve_start, now)
    profile = queries.usage_profile(curve_start, now, zone)
    heatmap = queries.weekday_hour_heatmap(curve_start, now, zone)
    gpus_by_purpose = {purpose.value: 0 for purpose in Purpose} | (
        Pool.objects.in_service(now).gpus_by_purpose()
    )
    # The sums under the utilisation KPIs, kept for their explanation: the last 24 (and
    # 7 × 24) whole UTC hours, the current one included.
    window_end = queries.ceil_hour(now)
    usage_24h = queries.fleet_usage_sums(window_end - timedelta(hours=24), window_end)
    usage_7d = queries.fleet_usage_sums(window_end - timedelta(days=7), window_end)
    context = {
        "now": now,
        "month_start": month_start,
        "month": month,
        "month_rows": month_rows,
        "gpus_by_purpose": [
            (purpose.label, purpose.value, gpus_by_purpose[purpose.value]) for purpose in Purpose
        ],
        "gpu_total": sum(gpus_by_purpose.values()),
        "utilization_24h_pct": costmodel.ratio_or_none(*usage_24h, 100),
        "utilization_7d_pct": costmodel.ratio_or_none(*usage_7d, 100),
        "usage_24h": usage_24h,
        "usage_7d": usage_7d,
        "curve_days": OVERVIEW_CURVE_DAYS,
        "zone_name": zone_name,
        "gpus_by_purpose_figure": freeze_figure(
            build_gpus_by_purpose_figure(gpus_by_purpose, dict(Purpose.choices))
        ),
        "busy_split_figure": freeze_figure(charts.build_daily_split_figure(split, metric="busy")),
        "cost_split_figure": freeze_figure(charts.build_daily_split_figure(split, metric="cost")),
        "cost_share_figure": freeze_figure(charts.build_share_donut(month_rows)),
        "hour_of_day_figure": freeze_figure(
            charts.build_hour_of_day_figure(profile, zone_name=zone_name)
        ),
        "heatmap_figure": freeze_figure(charts.build_heatmap_figure(heatmap, zone_name=zone_name)),
    }
    return context


POOL_CURVE_DAYS = 28


def pool_report_context(pool, now):
    """The pool page's cost figures and curves over the last 28 days, in its time zone."""
    remember_view("pool", str(pool.pk))
    return _pool_figures(pool, now)


def _pool_figures(pool, now):
    return cached("pool", {"pool": pool.pk}, lambda: _pool_report_context(pool, now))


def _pool_report_context(pool, now):
    start = now - timedelta(days=POOL_CURVE_DAYS)
    zone_name = pool.timezone or "UTC"
    rows = queries.cost_report(start, now, "pool", pool_slug=pool.slug)
    profile = queries.usage_profile(start, now, ZoneInfo(zone_name), pool=pool)
    return {
        "pool_report": rows[0] if rows else None,
        "pool_curve_days": POOL_CURVE_DAYS,
        "pool_zone_name": zone_name,
        "pool_hour_of_day_figure": freeze_figure(
            charts.build_hour_of_day_figure(profile, zone_name=zone_name)
        ),
        "pool_split_figure": freeze_figure(
            charts.build_daily_split_figure(
                queries.daily_split(start, now, pool=pool), metric="cost"
            )
        ),
    }


def _overview_figures(now):
    return cached("overview", {}, lambda: _overview_context(now))


@require_GET
def overview(request):
    remember_view("overview")
    context = _overview_figures(timezone.now())
    context["pool_count"] = Pool.objects.count()
    context["drills"] = overdue_and_failing_summary()
    return render_page(request, "reports/overview.html", context)


REPORT_STEPS = ("cost rows", "hour-of-day curve", "peak split", "daily split", "charts")


def _report_context(form, progress=None):
    """The report's figures. ``progress(steps_done, next_step)`` is told after each step
    when a worker computes a long range (``compute_report_in_background``)."""
    progress = progress or (lambda done, step: None)
    start, end = form.span_datetimes
    data = form.cleaned_data
    pool = data.get("pool")
    zone_name = data["tz"]
    zone = ZoneInfo(zone_name)
    rows = queries.cost_report(
        start,
        end,
        data["group_by"],
        purpose=data.get("purpose") or None,
        pool_slug=pool.slug if pool else None,
    )
    progress(1, REPORT_STEPS[1])
    profile = queries.usage_profile(
        start, end, zone, pool=pool, purpose=None if pool else (data.get("purpose") or None)
    )
    progress(2, REPORT_STEPS[2])
    peak_rows = queries.peak_split(start, end, purpose=data.get("purpose") or None, pool=pool)
    progress(3, REPORT_STEPS[3])
    split = queries.daily_split(start, end, pool=pool)
    progress(4, REPORT_STEPS[4])
    return {
        "rows": rows,
        "total": queries.total_row(rows),
        "group_by": data["group_by"],
        "start_day": data["start"],
        "end_day": data["end"],
        "zone_name": zone_name,
        "peak_rows": peak_rows,
        "cost_figure": freeze_figure(charts.build_cost_breakdown_figure(rows)),
        "hour_of_day_figure": freeze_figure(
            charts.build_hour_of_day_figure(profile, zone_name=zone_name)
        ),
        "split_figure": freeze_figure(charts.build_daily_split_figure(split, metric="cost")),
    }


def _filter_form(request) -> ReportFilterForm:
    """The page's filters; a first visit (no query at all) gets the defaults."""
    return ReportFilterForm(request.GET if request.GET else ReportFilterForm.defaults())


def _report_query(request) -> str:
    """The filters of a report request as a query string, without the export and
    compute switches."""
    query = request.GET.copy()
    query.pop("export", None)
    query.pop("compute", None)
    return query.urlencode()


def _report_keys(request, form) -> tuple[dict, dict]:
    """Cache parameters of a report's figures and of its rendered results partial."""
    filters = {name: getattr(value, "slug", value) for name, value in form.cleaned_data.items()}
    return filters, {**filters, "query": _report_query(request)}


def _report_results(request, form, progress=None):
    """The figures of a valid filter form, and the results partial rendered from them;
    both cached (the rendered table costs more than reading the figures,
    bench/dashboard.py)."""
    filters, query = _report_keys(request, form)
    results = cached("report", filters, lambda: _report_context(form, progress))
    html = cached("report-html", query, lambda: _render_results(request, {**results, "form": form}))
    return results, html


def _computes_in_background(request, form) -> bool:
    """Whether this page view hands its uncached figures to a worker: a range longer than
    ``SYNC_RECOMPUTE_DAYS``, where workers run, unless the visitor asked to compute in the
    page (``compute=inline``)."""
    if not workers_run_warm_ups() or request.GET.get("compute") == "inline":
        return False
    days = (form.cleaned_data["end"] - form.cleaned_data["start"]).days + 1
    return days > SYNC_RECOMPUTE_DAYS


def _background_report_html(request, form) -> str | None:
    """The progress partial of a report a worker computes, queuing the job once per
    range and data version; it polls the page until the figures are cached. None when
    the job cannot be queued: the page computes the figures."""
    query = _report_query(request)
    if start_background_job("report", query) and not _queue_report(query):
        return None
    progress = background_progress("report", query)
    last_heard = background_job_stalled("report", query, progress)
    if last_heard is not None:
        progress = _after_the_worker_stopped(query, datetime.fromtimestamp(last_heard, UTC))
        if progress is None:
            return None
    progress = progress or {"done": 0, "step": "waiting for a worker"}
    context = {
        "days": (form.cleaned_data["end"] - form.cleaned_data["start"]).days + 1,
        "progress_pct": round(100 * progress["done"] / len(REPORT_STEPS)),
        "progress_step": progress["step"],
        "progress_error": progress.get("error"),
        "progress_note": progress.get("note"),
        "progress_interrupted": progress.get("interrupted"),
        "poll_url": f"{request.path}?{query}",
        "inline_url": f"{request.path}?{query}{'&' if query else ''}compute=inline",
        "sync_days": SYNC_RECOMPUTE_DAYS,
    }
    return render_to_string("reports/report.html#computing", context, request=request)


def _queue_report(query: str) -> bool:
    """Hand the report to a worker; False when the broker cannot be reached."""
    try:
        compute_report_task.apply_async((query,), retry=False)
    except Exception:  # the broker's errors vary by transport
        # The page computes the figures itself rather than wait for a worker that cannot
        # be reached (its job key is dropped so the next view may queue it).
        logger.warning("could not queue the report computation", exc_info=True)
        forget_background_job("report", query)
        return False
    return True


def _after_the_worker_stopped(query: str, last_heard: datetime) -> dict | None:
    """The progress to show for a report whose worker stopped beating: queued again while
    it has attempts left, else given up with the way to compute it in the page. None
    when it cannot be queued again: the page computes the figures."""
    doing = "computing these figures"
    attempts = background_attempts("report", query)
    if attempts >= settings.RUN_MAX_ATTEMPTS:
        progress = {
            "done": 0,
            "step": "interrupted",
            "interrupted": interrupted_sentence(
                who="worker",
                doing=doing,
                last_heard=last_heard,
                next_step=f"it was given up after {attempts} attempt{'s' * (attempts != 1)}.",
            ),
        }
        set_background_progress("report", query, progress)
        return progress
    progress = {
        "done": 0,
        "step": "waiting for a worker",
        "note": interrupted_sentence(
            who="worker",
            doing=doing,
            last_heard=last_heard,
            next_step="they are being computed again.",
        ),
    }
    if retry_background_job("report", query, progress) and not _queue_report(query):
        return None
    return progress


def compute_report_in_background(query: str) -> bool:
    """What ``compute_report_task`` runs: the report's figures and partial into the cache,
    telling the progress partial after each step."""
    request = _warm_request(query)
    form = _filter_form(request)
    if not form.is_valid():
        return False

    def progress(done, step):
        set_background_progress("report", query, {"done": done, "step": step})
        record_background_heartbeat("report", query)

    progress(0, REPORT_STEPS[0])
    try:
        with background_heartbeat("report", query):
            _report_results(request, form, progress=progress)
    except Exception as error:
        # The polling page stops and says why, rather than waiting for the job's key to
        # expire; the task still fails, so the worker's log has the traceback.
        set_background_progress(
            "report",
            query,
            {"done": 0, "step": "failed", "error": f"{type(error).__name__}: {error}"},
        )
        raise
    return True


@require_GET
def report(request):
    form = _filter_form(request)
    context = {"form": form}
    export_format = request.GET.get("export")
    if not form.is_valid():
        context["results_html"] = _render_results(request, {"form": form})
    elif export_format in exports.FORMATS:
        results, _ = _report_results(request, form)
        return exports.cost_report_response(
            results["rows"], form.cleaned_data, export_format, total=results["total"]
        )
    else:
        remember_view("report", _report_query(request))
        # The rendered partial alone when it is cached: the figures under it (a hundred
        # rows and three charts) need not be read back.
        html = cached_value("report-html", _report_keys(request, form)[1])
        if html is None and _computes_in_background(request, form):
            html = _background_report_html(request, form)
        if html is None:
            html = _report_results(request, form)[1]
        context["results_html"] = html
    # Filter changes swap only the results (hx-target="#report-results"): the filter fields
    # and recent jobs are read for the whole page only.
    fragments = {"report-results": "report-results"}
    if not fragment_for(request, fragments):
        context["filter_fields_html"] = _filter_fields_html(request, form)
        context["recent_jobs"] = mark_waiting(
            RecomputeJob.objects.all()[:3],
            recompute_days_task,
            not_started=RecomputeJob.Status.QUEUED,
        )
    return render_page(request, "reports/report.html", context, fragments=fragments)


def _filter_fields_html(request, form) -> str:
    """The filter fields, rendered; cached for valid filters, because Django renders each
    of the pool list's options through a template (a 100-pool fleet: ~20 ms a page,
    bench/dashboard.py) and the list changes only with a pool, which bumps the version."""

    def render():
        return render_to_string("reports/report.html#filter_fields", {"form": form})

    if not form.is_valid():
        return render()
    return cached("report-filter-fields", {"query": request.GET.urlencode()}, render)


# --- how a figure was computed (apps/reports/explain.py) ---------------------------------


def _explain_page(request, context, status=200):
    """The explanation as the drawer's fragment for htmx, or as a page of its own (a link
    opened without JavaScript, or in a new tab)."""
    return render_page(
        request, "reports/explain.html", context, partial="explanation", status=status
    )


@require_GET
def report_explain(request):
    """How one cell of the reports table was computed: ``?<the page's filters>&row=<key>
    &figure=<CostRow figure>``; no row: the total row. The figures are the page's own
    (the same cache entry), so the last step is the number the cell shows."""
    form = _filter_form(request)
    figure = request.GET.get("figure") or "cost_usd"
    if not form.is_valid() or figure not in explain.REPORTED:
        return _explain_page(request, {"error": "Choose a figure of a valid report."}, 400)
    filters, _ = _report_keys(request, form)
    results = cached("report", filters, lambda: _report_context(form))
    row_key = request.GET.get("row", "")
    if not row_key:
        row = results["total"]
    else:
        row = next((found for found in results["rows"] if found.key == row_key), None)
    if row is None:
        return _explain_page(request, {"error": f"No row “{row_key}” in this report."}, 404)
    data = form.cleaned_data
    context = {
        "title": f"{explain.FIGURES[figure][0]}: {row.label}",
        "period": (
            f"By {data['group_by']}, UTC days {data['start']:%-d %b %Y} – "
            f"{data['end']:%-d %b %Y} (both included)"
        ),
        "sections": [(explain.FIGURES[figure][0], explain.explain_figure(row, figure))],
        "back_url": f"{reverse('reports:report')}?{_report_query(request)}",
    }
    return _explain_page(request, context)


# Overview KPI → (title, figures of the month-to-date total row).
OVERVIEW_MONTH_KPIS = {
    "cost": ("Cost, month to date", ("cost_usd", "unmeasured_cost_usd")),
    "idle": ("Idle cost, month to date", ("idle_cost_usd",)),
    "per-request": (
        "Inference cost per 1k requests, month to date",
        ("cost_per_1k_requests_usd", "cost_per_1m_tokens_usd"),
    ),
    "training": (
        "Per effective training GPU-hour, month to date",
        ("cost_per_effective_training_gpu_hour_usd", "lost_gpu_hours", "interruption_cost_usd"),
    ),
    "unmeasured": ("Unmeasured, month to date", ("unmeasured_gpu_hours",)),
}
OVERVIEW_KPIS = ("gpus", "utilization", *OVERVIEW_MONTH_KPIS, "drills")


@require_GET
def overview_explain(request):
    """How one Overview KPI (``?kpi=``) was computed, from the Overview's own cached
    figures."""
    kpi = request.GET.get("kpi") or "cost"
    if kpi not in OVERVIEW_KPIS:
        return _explain_page(request, {"error": f"No figure “{kpi}” on the Overview."}, 404)
    now = timezone.now()
    figures = _overview_figures(now)
    period = f"Month to date: since {figures['month_start']:%-d %b %Y} 00:00 UTC"
    if kpi in OVERVIEW_MONTH_KPIS:
        title, names = OVERVIEW_MONTH_KPIS[kpi]
        month = figures["month"]
        sections = [
            (explain.FIGURES[name][0], explain.explain_figure(month, name)) for name in names
        ]
    elif kpi == "utilization":
        title, period = "Utilisation", "Pool-hours with telemetry, every pool"
        sections = [
            (
                f"Utilisation, {label}",
                explain.explain_utilization(
                    *figures[f"usage_{key}"], figures[f"utilization_{key}_pct"], period=label
                ),
            )
            for key, label in (("24h", "last 24 h"), ("7d", "last 7 days"))
        ]
    elif kpi == "gpus":
        title, period = "GPUs", "Every pool in service now"
        by_purpose = [(label, gpus) for label, _, gpus in figures["gpus_by_purpose"]]
        sections = [("GPUs", explain.explain_gpu_total(by_purpose, figures["gpu_total"]))]
    else:
        title, period = "Restore drills overdue", f"Backup policies at {now:%-d %b %Y %H:%M} UTC"
        sections = [("Drills", explain.explain_drills(overdue_and_failing_summary(now)))]
    context = {
        "title": title,
        "period": period,
        "sections": sections,
        "back_url": reverse("core:overview"),
    }
    return _explain_page(request, context)


# --- warm-up: recompute viewed pages after a change (apps/reports/cache.py) ---------------


def _warm_request(query: str) -> HttpRequest:
    """A GET of the reports page as the warm-up renders it: the results partial reads
    only the query string, never the user."""
    request = HttpRequest()
    request.method = "GET"
    request.path = reverse("reports:report")
    request.GET = QueryDict(query)
    request.user = AnonymousUser()
    return request


def warm_view(kind: str, argument: str = "") -> bool:
    """Compute one remembered page's figures into the cache (a no-op when they are there
    already). False when the page no longer exists or its filters are no longer valid."""
    now = timezone.now()
    if kind == "overview":
        _overview_figures(now)
        return True
    if kind == "pool":
        pool = Pool.objects.filter(pk=int(argument)).select_related("gpu_model").first()
        if pool is None:
            return False
        _pool_figures(pool, now)
        return True
    if kind == "report":
        request = _warm_request(argument)
        form = _filter_form(request)
        if not form.is_valid():
            return False
        _report_results(request, form)
        _filter_fields_html(request, form)
        return True
    return False


def warm_recent_views(budget_seconds: float = WARM_BUDGET_SECONDS) -> int:
    """Recompute the pages viewed lately, most recent first, until the budget is spent.
    Returns how many were warmed."""
    started = time.monotonic()
    warmed = 0
    for kind, argument in recent_views():
        if time.monotonic() - started > budget_seconds:
            break
        warmed += warm_view(kind, argument)
    return warmed


def _render_results(request, context):
    # Each figure links to its explanation under the same filters.
    context = {**context, "explain_query": _report_query(request)}
    return render_to_string("reports/report.html#results_body", context, request=request)


@permission_required("reports.add_recomputejob", raise_exception=True)
@require_POST
def recompute_create(request):
    form = ReportFilterForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a valid range to recompute.")
        return redirect("reports:report")
    with transaction.atomic():
        job = RecomputeJob.objects.create(
            start_day=form.cleaned_data["start"],
            end_day=form.cleaned_data["end"],
            created_by=request.user,
        )
        enqueue(recompute_days_task, job.pk)
    return redirect("reports:recompute_detail", pk=job.pk)


@require_GET
def recompute_detail(request, pk):
    job = get_object_or_404(RecomputeJob.objects.select_related("created_by"), pk=pk)
    mark_waiting([job], recompute_days_task, not_started=RecomputeJob.Status.QUEUED)
    return render_page(
        request,
        "reports/recompute_detail.html",
        {"job": job},
        fragments={"recompute-progress": "recompute-progress"},
    )


# --- interruptions -----------------------------------------------------------------------


@require_GET
def interruption_list(request):
    interruptions = Interruption.objects.select_related("workload", "recorded_by").order_by(
        "-occurred_at", "-id"
    )
    workload = request.GET.get("workload")
    if workload:
        interruptions = interruptions.filter(workload__slug=workload)
    page = Paginator(interruptions, 25).get_page(request.GET.get("page"))
    return render_page(
        request, "reports/interruption_list.html", {"page": page, "workload_slug": workload}
    )


@require_GET
def interruption_detail(request, pk):
    interruption = get_object_or_404(Interruption.objects.select_related("workload__pool"), pk=pk)
    return render_page(
        request,
        "reports/interruption_detail.html",
        {"interruption": interruption, "history": history_rows(interruption)},
    )


class _RecordingForm(InterruptionForm):
    """Sets who recorded a new interruption."""

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def save(self, commit=True):
        interruption = super().save(commit=False)
        if interruption.recorded_by_id is None:
            interruption.recorded_by = self.user
        if commit:
            interruption.save()
        return interruption


@permission_required("pools.add_interruption", raise_exception=True)
@require_http_methods(["GET", "POST"])
def interruption_create(request):
    initial = {"occurred_at": timezone.now().replace(second=0, microsecond=0)}
    if request.GET.get("workload"):
        initial["workload"] = request.GET["workload"]

    def form_class(*args, **kwargs):
        return _RecordingForm(*args, user=request.user, **kwargs)

    return form_page(
        request,
        form_class=form_class,
        noun="Interruption",
        template="reports/interruption_form.html",
        initial=initial,
    )


@permission_required("pools.change_interruption", raise_exception=True)
@require_http_methods(["GET", "POST"])
def interruption_edit(request, pk):
    interruption = get_object_or_404(Interruption, pk=pk)
    return form_page(
        request,
        form_class=InterruptionForm,
        noun="Interruption",
        template="reports/interruption_form.html",
        instance=interruption,
    )


@permission_required("pools.delete_interruption", raise_exception=True)
@require_http_methods(["GET", "POST"])
def interruption_delete(request, pk):
    interruption = get_object_or_404(Interruption, pk=pk)
    return delete_page(
        request,
        obj=interruption,
        noun="Interruption",
        blocking=[],
        blocking_label="",
        list_url=reverse("reports:interruption_list"),
        cancel_url=interruption.get_absolute_url(),
        pretitle="Interruptions",
    )
