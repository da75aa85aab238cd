from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.scope import scope_of
from apps.catalog.models import GpuModel
from apps.core.crud import delete_page, form_page
from apps.core.history import history_rows
from apps.core.htmx import render_page
from apps.core.tables import configure_table
from apps.core.texts import translated
from apps.pools import list_columns
from apps.pools.assessment import assess_workload
from apps.pools.charts import build_memory_breakdown_figure
from apps.pools.estimates import EstimateError, run_memory_estimate
from apps.pools.filters import PoolFilter, WorkloadFilter
from apps.pools.forms import CalculatorForm, PoolForm, WorkloadForm
from apps.pools.models import Pool, Workload
from apps.pools.prices import price_history
from apps.pools.scoped import in_scope_or_404
from apps.pools.signals import service_period_changed
from apps.pools.tables import PoolTable, WorkloadTable, with_price_per_hour


def _pools(request):
    """The pools in the requesting user's scope: any other is a 404."""
    return Pool.objects.in_scope(scope_of(request.user))


def _workloads(request):
    """The workloads in the requesting user's scope: any other is a 404."""
    return Workload.objects.in_scope(scope_of(request.user))


def _pool_named(request, slug):
    return _pools(request).filter(slug=slug)


def _workload_named(request, slug):
    return _workloads(request).filter(slug=slug)


@require_GET
def pool_list(request):
    scope = scope_of(request.user)
    # Archived pools are hidden unless the filter's "Show" asks for them.
    pool_filter = PoolFilter(request.GET, queryset=_pools(request), request=request)
    filtered_pools = pool_filter.qs
    pools = with_price_per_hour(
        filtered_pools.with_workload_counts(scope).select_related("owner", "gpu_model")
    )
    # The apps above pools add their columns (usage, cost) through the registry.
    pools, extra_columns, column_notes = list_columns.apply(pools, timezone.now(), scope)
    table = PoolTable(pools, extra_columns=extra_columns)
    context = {
        "table": table,
        "page": configure_table(request, table),
        "filter": pool_filter,
        "totals": filtered_pools.totals(),
        "is_filtered": any(request.GET.get(name) for name in pool_filter.form.fields),
        "column_notes": column_notes,
    }
    # The filter form, the sort headers and the pagination swap only the table.
    return render_page(
        request, "pools/pool_list.html", context, fragments={"pool-table": "pool-table"}
    )


@require_GET
def pool_detail(request, slug):
    pool = get_object_or_404(
        _pools(request).select_related("owner", "gpu_model", "team"), slug=slug
    )
    # A shared pool may run other teams' workloads: only those in scope are listed.
    workloads = list(
        _workloads(request).filter(pool=pool).select_related("owner", "model_architecture", "team")
    )
    gpu_catalog = list(GpuModel.objects.all())
    rows = []
    for workload in workloads:
        workload.pool = pool  # already loaded: saves one query per workload
        rows.append((workload, assess_workload(workload, gpu_catalog=gpu_catalog)))
    context = {
        "pool": pool,
        "rows": rows,
        "price_breakdown": pool.price_breakdown(),
        "findings_count": sum(len(assessment.findings) for _, assessment in rows),
        "history": history_rows(pool),
        "price_periods": price_history(pool),
    }
    return render_page(request, "pools/pool_detail.html", context)


@permission_required("pools.add_pool", raise_exception=True)
@require_http_methods(["GET", "POST"])
def pool_create(request):
    scope = scope_of(request.user)
    # One team of one's own is the likely owner; more, or none, and the person chooses.
    initial = {"team": next(iter(scope.team_ids))} if len(scope.team_ids) == 1 else None
    return form_page(
        request,
        form_class=partial(PoolForm, scope=scope, user=request.user),
        noun=gettext("Pool"),
        template="pools/pool_form.html",
        initial=initial,
    )


@in_scope_or_404(_pool_named)
@permission_required("pools.change_pool", raise_exception=True)
@require_http_methods(["GET", "POST"])
def pool_edit(request, slug):
    pool = get_object_or_404(_pools(request), slug=slug)
    service_period = pool.service_period
    response = form_page(
        request,
        form_class=partial(PoolForm, scope=scope_of(request.user), user=request.user),
        noun=gettext("Pool"),
        template="pools/pool_form.html",
        instance=pool,
    )
    # A saved form redirects; a refused one has still copied its valid fields onto ``pool``.
    if response.status_code == 302 and pool.service_period != service_period:
        service_period_changed.send(sender=Pool, pool=pool)
    return response


@in_scope_or_404(_pool_named)
@permission_required("pools.delete_pool", raise_exception=True)
@require_http_methods(["GET", "POST"])
def pool_delete(request, slug):
    pool = get_object_or_404(_pools(request), slug=slug)
    return delete_page(
        request,
        obj=pool,
        noun=gettext("Pool"),
        blocking=_blocking_workloads(request, pool),
        blocking_label=gettext("workloads"),
        list_url="pools:pool_list",
        cancel_url=pool.get_absolute_url(),
        pretitle=gettext("Pools"),
        usage_history=pool.usage_history(),
        archive_url=reverse("pools:pool_archive", kwargs={"slug": pool.slug}),
    )


def _blocking_workloads(request, pool) -> list:
    """The workloads that keep ``pool`` from being deleted: those in scope by name, the
    others of a shared pool as one line that names no other team's workload."""
    shown = list(_workloads(request).filter(pool=pool).order_by("name"))
    hidden = pool.workloads.count() - len(shown)
    if hidden:
        shown.append(HiddenWorkloads(hidden))
    return shown


class HiddenWorkloads:
    """A line of a delete page standing for the workloads of other teams on a pool."""

    name = ""

    def __init__(self, count: int):
        self.name = ngettext(
            "%(count)s workload of another team", "%(count)s workloads of other teams", count
        ) % {"count": count}

    def get_absolute_url(self):
        return ""

    def __str__(self):
        return self.name


def _set_archived(request, obj, *, archived: bool):
    is_pool = isinstance(obj, Pool)
    if archived and obj.archived_at is None:
        obj.archived_at = timezone.now()
        message = (
            gettext(
                "Pool %(name)s archived: hidden from lists, its history kept in every report, "
                "export and API answer."
            )
            if is_pool
            else gettext(
                "Workload %(name)s archived: hidden from lists, its history kept in every "
                "report, export and API answer."
            )
        )
        messages.success(request, message % {"name": obj.name})
    elif not archived and obj.archived_at is not None:
        obj.archived_at = None
        message = (
            gettext("Pool %(name)s restored.")
            if is_pool
            else gettext("Workload %(name)s restored.")
        )
        messages.success(request, message % {"name": obj.name})
    obj.save(update_fields=["archived_at", "updated_at"])
    return redirect(obj)


@in_scope_or_404(_pool_named)
@permission_required("pools.change_pool", raise_exception=True)
@require_POST
def pool_archive(request, slug):
    return _set_archived(request, get_object_or_404(_pools(request), slug=slug), archived=True)


@in_scope_or_404(_pool_named)
@permission_required("pools.change_pool", raise_exception=True)
@require_POST
def pool_restore(request, slug):
    return _set_archived(request, get_object_or_404(_pools(request), slug=slug), archived=False)


@require_GET
def workload_list(request):
    workload_filter = WorkloadFilter(
        request.GET, queryset=_workloads(request).with_pool(), request=request
    )
    table = WorkloadTable(workload_filter.qs)
    page = configure_table(request, table)
    gpu_catalog = list(GpuModel.objects.all())
    for workload in page:
        workload.assessment = assess_workload(workload, gpu_catalog=gpu_catalog)
    context = {
        "table": table,
        "page": page,
        "filter": workload_filter,
        "archived": request.GET.get("archived", ""),
    }
    return render_page(
        request, "pools/workload_list.html", context, fragments={"workloads": "workloads"}
    )


@require_GET
def workload_detail(request, slug):
    workload = get_object_or_404(
        _workloads(request).with_pool().select_related("team", "pool__team"), slug=slug
    )
    assessment = assess_workload(workload)
    context = {
        "workload": workload,
        "assessment": assessment,
        "history": history_rows(workload),
        "memory_figure": build_memory_breakdown_figure(
            assessment.breakdown, workload.pool.gpu_model
        )
        if assessment.breakdown
        else None,
    }
    return render_page(request, "pools/workload_detail.html", context)


@permission_required("pools.add_workload", raise_exception=True)
@require_http_methods(["GET", "POST"])
def workload_create(request):
    initial = {"pool": request.GET["pool"]} if request.GET.get("pool") else None
    return form_page(
        request,
        form_class=partial(WorkloadForm, scope=scope_of(request.user)),
        noun=gettext("Workload"),
        template="pools/workload_form.html",
        initial=initial,
    )


@in_scope_or_404(_workload_named)
@permission_required("pools.change_workload", raise_exception=True)
@require_http_methods(["GET", "POST"])
def workload_edit(request, slug):
    workload = get_object_or_404(_workloads(request), slug=slug)
    return form_page(
        request,
        form_class=partial(WorkloadForm, scope=scope_of(request.user)),
        noun=gettext("Workload"),
        template="pools/workload_form.html",
        instance=workload,
    )


@in_scope_or_404(_workload_named)
@permission_required("pools.delete_workload", raise_exception=True)
@require_http_methods(["GET", "POST"])
def workload_delete(request, slug):
    workload = get_object_or_404(_workloads(request), slug=slug)
    return delete_page(
        request,
        obj=workload,
        noun=gettext("Workload"),
        blocking=[],
        blocking_label="",
        list_url="pools:workload_list",
        cancel_url=workload.get_absolute_url(),
        pretitle=gettext("Workloads"),
        usage_history=workload.usage_history(),
        archive_url=reverse("pools:workload_archive", kwargs={"slug": workload.slug}),
    )


@in_scope_or_404(_workload_named)
@permission_required("pools.change_workload", raise_exception=True)
@require_POST
def workload_archive(request, slug):
    workload = get_object_or_404(_workloads(request), slug=slug)
    return _set_archived(request, workload, archived=True)


@in_scope_or_404(_workload_named)
@permission_required("pools.change_workload", raise_exception=True)
@require_POST
def workload_restore(request, slug):
    workload = get_object_or_404(_workloads(request), slug=slug)
    return _set_archived(request, workload, archived=False)


@require_GET
def calculator(request):
    """What-if: recompute memory as fields change (htmx), without editing anything."""
    estimate = None
    if request.GET.get("mode"):
        form = CalculatorForm(request.GET)
        if form.is_valid():
            try:
                estimate = run_memory_estimate(form.cleaned_data)
            except EstimateError as error:
                form.add_error(
                    error.field if error.field in form.fields else None, translated(error)
                )
    else:
        initial = {"mode": "inference", "model": "llama-3-8b", "gpu_model": "h100-sxm"}
        # A workload out of scope is not there: the calculator starts from its defaults.
        workload = _workloads(request).with_pool().filter(slug=request.GET.get("workload")).first()
        if workload is not None:
            initial = CalculatorForm.initial_from_workload(workload)
        elif request.GET.get("model"):
            initial["model"] = request.GET["model"]
        form = CalculatorForm.with_defaults(initial)
        if form.is_valid():
            estimate = run_memory_estimate(form.cleaned_data)
    context = {
        "form": form,
        "field_groups": [
            (
                gettext("Custom shape"),
                "custom-shape",
                form.grouped(form.shape_fields),
                gettext("Used when no architecture is chosen."),
            ),
            (
                gettext("Hardware"),
                "hardware",
                form.grouped(("gpu_model", "gpus", "tensor_parallel")),
                "",
            ),
            (gettext("Training settings"), "training", form.grouped(form.training_fields), ""),
            (gettext("Inference settings"), "inference", form.grouped(form.inference_fields), ""),
        ],
        "estimate": estimate,
        "error_lines": [
            (name, form.fields[name].label if name in form.fields else None, error)
            for name, errors in form.errors.items()
            for error in errors
        ],
        "memory_figure": (
            build_memory_breakdown_figure(estimate["breakdown"], estimate["gpu"])
            if estimate and estimate["gpu"]
            else None
        ),
    }
    return render_page(
        request,
        "pools/calculator.html",
        context,
        fragments={"calculator-result": "calculator-result"},
    )
