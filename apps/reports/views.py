"""The reports page (filters through htmx, CSV/XLSX export, a recompute job with
progress), a pool's report panel, and the interruptions of training jobs. The figures come
from apps/reports/selectors.py; these views only read and render them."""

import logging
from datetime import UTC, datetime

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.paginator import Paginator
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop, ngettext
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import retarget

from apps.accounts.scope import scope_of
from apps.core.crud import ObjectViews
from apps.core.history import history_rows
from apps.core.htmx import fragment_for, render_page
from apps.core.outbox import enqueue, mark_waiting
from apps.core.runs import interrupted_sentence
from apps.core.tables import configure_table
from apps.core.texts import translated
from apps.pools.models import Interruption, Purpose
from apps.pools.querysets import workload_scope_filter
from apps.pools.views import pool_views
from apps.reports import charts, exports, rendering, selectors
from apps.reports.cache import (
    background_attempts,
    background_job_stalled,
    background_progress,
    cached_value,
    forget_background_job,
    remember_view,
    report_job,
    retry_background_job,
    set_background_progress,
    start_background_job,
    workers_run_warm_ups,
)
from apps.reports.cost import explain
from apps.reports.forms import (
    GROUP_BY_NOUNS,
    SYNC_RECOMPUTE_DAYS,
    InterruptionForm,
    ReportFilterForm,
    report_filter_form,
)
from apps.reports.lending import capacity as lending
from apps.reports.lending import selectors as lending_selectors
from apps.reports.models import RecomputeJob
from apps.reports.tables import LendableTable, ReportTable
from apps.reports.tasks import compute_report_task, recompute_days_task

logger = logging.getLogger(__name__)
TABLE_ID = ReportTable.element_id


def _filter_form(request) -> ReportFilterForm:
    """The page's filters, offering the pools in the viewer's scope; a first visit (no
    query at all) gets the defaults."""
    return report_filter_form(request.GET, scope_of(request.user))


def _report_query(request) -> str:
    """The filters of a report request as a query string, without the export and
    compute switches."""
    query = request.GET.copy()
    query.pop("export", None)
    query.pop("compute", None)
    return query.urlencode()


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
    scope_key = form.scope.cache_key
    job = report_job(query, scope_key)
    if start_background_job("report", job) and not _queue_report(query, scope_key):
        return None
    progress = background_progress("report", job)
    last_heard = background_job_stalled("report", job, progress)
    if last_heard is not None:
        last_heard_at = datetime.fromtimestamp(last_heard, UTC)
        progress = _after_the_worker_stopped(query, scope_key, last_heard_at)
        if progress is None:
            return None
    progress = progress or {"done": 0, "step": WAITING_STEP}
    context = {
        "days": (form.cleaned_data["end"] - form.cleaned_data["start"]).days + 1,
        "progress_pct": round(100 * progress["done"] / len(selectors.REPORT_STEPS)),
        # The cache keeps the step in English; it is translated here, where it is shown.
        "progress_step": _(progress["step"]),
        "progress_error": progress.get("error"),
        "progress_note": progress.get("note"),
        "progress_interrupted": progress.get("interrupted"),
        "poll_url": f"{request.path}?{query}",
        "inline_url": f"{request.path}?{query}{'&' if query else ''}compute=inline",
        "sync_days": SYNC_RECOMPUTE_DAYS,
    }
    return render_to_string("reports/report.html#computing", context, request=request)


# The steps of a report's progress besides selectors.REPORT_STEPS.
WAITING_STEP = gettext_noop("waiting for a worker")
INTERRUPTED_STEP = gettext_noop("interrupted")


def _queue_report(query: str, scope_key: str) -> bool:
    """Hand the report to a worker, which renders it in the page's language for the
    viewer's scope (``scope_key``); False when the broker cannot be reached."""
    try:
        compute_report_task.apply_async((query, translation.get_language(), scope_key), retry=False)
    except Exception:  # the broker's errors vary by transport
        # The page computes the figures itself rather than wait for a worker that cannot
        # be reached (its job key is dropped so the next view may queue it).
        logger.warning("could not queue the report computation", exc_info=True)
        forget_background_job("report", report_job(query, scope_key))
        return False
    return True


def _after_the_worker_stopped(query: str, scope_key: str, last_heard: datetime) -> dict | None:
    """The progress to show for a report whose worker stopped beating: queued again while
    it has attempts left, else given up with the way to compute it in the page. None
    when it cannot be queued again: the page computes the figures."""
    doing = _("computing these figures")
    job = report_job(query, scope_key)
    attempts = background_attempts("report", job)
    if attempts >= settings.RUN_MAX_ATTEMPTS:
        progress = {
            "done": 0,
            "step": INTERRUPTED_STEP,
            "interrupted": translated(
                interrupted_sentence(
                    who=_("The worker"),
                    doing=doing,
                    last_heard=last_heard,
                    next_step=ngettext(
                        "it was given up after %(attempts)d attempt.",
                        "it was given up after %(attempts)d attempts.",
                        attempts,
                    )
                    % {"attempts": attempts},
                )
            ),
        }
        set_background_progress("report", job, progress)
        return progress
    progress = {
        "done": 0,
        "step": WAITING_STEP,
        "note": translated(
            interrupted_sentence(
                who=_("The worker"),
                doing=doing,
                last_heard=last_heard,
                next_step=_("they are being computed again."),
            )
        ),
    }
    if retry_background_job("report", job, progress) and not _queue_report(query, scope_key):
        return None
    return progress


@require_GET
def report(request):
    form = _filter_form(request)
    context = {"form": form}
    export_format = request.GET.get("export")
    query = _report_query(request)
    if not form.is_valid():
        context["results_html"] = rendering.render_results(form, query)
    elif export_format in exports.FORMATS:
        results = selectors.report_figures(form.cleaned_data, scope=form.scope)
        return exports.cost_report_response(
            results["rows"], form.cleaned_data, export_format, total=results["total"]
        )
    else:
        remember_view("report", query, form.scope.cache_key)
        if fragment_for(request, {TABLE_ID: TABLE_ID}):
            # A sort header: the table alone, from the figures the page shows.
            figures = cached_value(
                "report", selectors.report_cache_filters(form.cleaned_data, form.scope)
            )
            if figures is None and not _computes_in_background(request, form):
                figures = selectors.report_figures(form.cleaned_data, scope=form.scope)
            if figures is not None:
                return HttpResponse(rendering.report_table_html(form, query, figures))
        # The rendered partial alone when it is cached: the figures under it (a hundred
        # rows and three charts) need not be read back.
        html = cached_value(
            "report-html",
            rendering.results_cache_parameters(form.cleaned_data, query, form.scope),
        )
        if html is None and _computes_in_background(request, form):
            html = _background_report_html(request, form)
        if html is None:
            html = rendering.report_results(form, query)[1]
        context["results_html"] = html
    # Filter changes swap only the results (hx-target="#report-results"): the filter fields
    # and recent jobs are read for the whole page only. A sort whose table cannot be drawn
    # yet (invalid filters, figures a worker is computing) gets the results in its place.
    fragments = {"report-results": "report-results", TABLE_ID: "report-results"}
    if not fragment_for(request, fragments):
        context["filter_fields_html"] = rendering.filter_fields_html(form, request.GET.urlencode())
        context["recent_jobs"] = mark_waiting(
            RecomputeJob.objects.all()[:3],
            recompute_days_task,
            not_started=RecomputeJob.Status.QUEUED,
        )
    response = render_page(request, "reports/report.html", context, fragments=fragments)
    if fragment_for(request, {TABLE_ID: TABLE_ID}):
        retarget(response, "#report-results")
    return response


@pool_views.object_view(related=("gpu_model",))
@require_GET
def pool_panel(request, pool):
    """The pool page's cost and use over the last 28 days, in its time zone, loaded by the
    page once it is shown."""
    scope = scope_of(request.user)
    remember_view("pool", str(pool.pk), scope.cache_key)
    context = {
        "pool": pool,
        "panel_title": _("cost and use"),
        "panel_template": "reports/_pool_report.html",
        **selectors.pool_figures(pool, timezone.now(), scope),
    }
    return render_page(request, "layouts/pool_panel.html", context, partial="panel")


# --- how a figure was computed (apps/reports/cost/explain.py) ----------------------------


def explain_page(request, context, status=200):
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
        return explain_page(request, {"error": _("Choose a figure of a valid report.")}, 400)
    results = selectors.report_figures(form.cleaned_data, scope=form.scope)
    row_key = request.GET.get("row", "")
    if not row_key:
        row = results["total"]
    else:
        row = next((found for found in results["rows"] if found.key == row_key), None)
    if row is None:
        error = _("No row “%(row)s” in this report.") % {"row": row_key}
        return explain_page(request, {"error": error}, 404)
    data = form.cleaned_data
    # English keeps its "1 May 2026"; other languages get the unambiguous 2026-05-01.
    day_format = "%-d %b %Y" if translation.get_language() == "en" else "%Y-%m-%d"
    context = {
        "title": _("%(figure)s: %(row)s")
        % {"figure": _(explain.FIGURES[figure][0]), "row": row.label},
        "period": _("By %(group)s, UTC days %(start)s – %(end)s (both included)")
        % {
            "group": GROUP_BY_NOUNS[data["group_by"]],
            "start": f"{data['start']:{day_format}}",
            "end": f"{data['end']:{day_format}}",
        },
        "sections": [(_(explain.FIGURES[figure][0]), explain.explain_figure(row, figure))],
        "back_url": f"{reverse('reports:report')}?{_report_query(request)}",
    }
    return explain_page(request, context)


@permission_required("reports.add_recomputejob", raise_exception=True)
@require_POST
def recompute_create(request):
    form = ReportFilterForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose a valid range to recompute."))
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


def interruptions_in(scope):
    """The interruptions of the workloads in ``scope``."""
    return Interruption.objects.filter(workload_scope_filter(scope, "workload__"))


class _RecordingForm(InterruptionForm):
    """Sets who recorded a new interruption (an edited one keeps its own)."""

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def save(self, commit=True):
        interruption = super().save(commit=False)
        if interruption._state.adding and interruption.recorded_by_id is None:
            interruption.recorded_by = self.user
        if commit:
            interruption.save()
        return interruption


class InterruptionViews(ObjectViews):
    model = Interruption
    noun = gettext_lazy("Interruption")
    lookup = {"pk": "pk"}
    form = _RecordingForm
    template = "reports/interruption_form.html"
    list_url = "reports:interruption_list"
    pretitle = gettext_lazy("Interruptions")

    def objects(self, request):
        return interruptions_in(scope_of(request.user))

    def form_kwargs(self, request, parent):
        return {"user": request.user, "scope": scope_of(request.user)}

    def initial(self, request, parent):
        initial = {"occurred_at": timezone.now().replace(second=0, microsecond=0)}
        if request.GET.get("workload"):
            initial["workload"] = request.GET["workload"]
        return initial


interruption_views = InterruptionViews()


@require_GET
def interruption_list(request):
    interruptions = (
        interruptions_in(scope_of(request.user))
        .select_related("workload", "recorded_by")
        .order_by("-occurred_at", "-id")
    )
    workload = request.GET.get("workload")
    if workload:
        interruptions = interruptions.filter(workload__slug=workload)
    page = Paginator(interruptions, 25).get_page(request.GET.get("page"))
    return render_page(
        request, "reports/interruption_list.html", {"page": page, "workload_slug": workload}
    )


@interruption_views.object_view(related=("workload__pool",))
@require_GET
def interruption_detail(request, interruption):
    return render_page(
        request,
        "reports/interruption_detail.html",
        {"interruption": interruption, "history": history_rows(interruption)},
    )


interruption_create = interruption_views.create_view()
interruption_edit = interruption_views.edit_view()
interruption_delete = interruption_views.delete_view()


# --- lendable off-peak capacity (apps/reports/lending/) ------------------------------------


def _lending_context(result) -> dict:
    return {
        "lendable": result,
        "lending_window_days": lending.WINDOW_DAYS,
        "lending_min_observations": lending.MIN_OBSERVATIONS,
        "lending_slots_per_week": lending.SLOTS_PER_WEEK,
        "free_gpus_figure": charts.build_free_gpus_figure(
            result.free_gpus if result.has_data else [], zone_name=result.zone_name
        ),
    }


@pool_views.object_view(related=("gpu_model",))
@require_GET
def pool_lending_panel(request, pool):
    """The pool page's lendable off-peak capacity, for an inference pool; loaded by the
    page once it is shown."""
    scope = scope_of(request.user)
    context = {
        "pool": pool,
        "panel_title": _("lendable off-peak capacity"),
        "panel_template": "reports/_pool_lending.html",
        "is_inference": pool.purpose == Purpose.INFERENCE,
    }
    if context["is_inference"]:
        context.update(
            _lending_context(lending_selectors.pool_lendable_figures(pool, timezone.now(), scope))
        )
    return render_page(request, "layouts/pool_panel.html", context, partial="panel")


@require_GET
def lendable_list(request):
    """Every inference pool in the viewer's scope with its lendable off-peak capacity,
    sortable (``?sort=value``, ``-value``), as CSV with ``?export=csv``."""
    fleet = lending_selectors.lendable_figures(timezone.now(), scope_of(request.user))
    if request.GET.get("export") == "csv":
        return exports.lendable_response(fleet)
    table = LendableTable(fleet.rows)
    configure_table(request, table, per_page=None)
    context = {
        "fleet": fleet,
        "table": table,
        "lending_window_days": lending.WINDOW_DAYS,
        "margin_pct": settings.LENDING_SAFETY_MARGIN_PCT,
        "lending_min_observations": lending.MIN_OBSERVATIONS,
    }
    return render_page(
        request, "reports/lendable_list.html", context, fragments={"lendable-table": "table"}
    )
