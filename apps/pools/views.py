from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

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
from apps.pools.signals import service_period_changed
from apps.pools.tables import PoolTable, WorkloadTable, with_price_per_hour


@require_GET
def pool_list(request):
    # Archived pools are hidden unless the filter's "Show" asks for them.
    pool_filter = PoolFilter(request.GET, queryset=Pool.objects.all())
    filtered_pools = pool_filter.qs
    pools = with_price_per_hour(
        filtered_pools.with_workload_counts().select_related("owner", "gpu_model")
    )
    # The apps above pools add their columns (usage, cost) through the registry.
    pools, extra_columns, column_notes = list_columns.apply(pools, timezone.now())
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
    pool = get_object_or_404(Pool.objects.select_related("owner", "gpu_model"), slug=slug)
    workloads = list(pool.workloads.select_related("owner", "model_architecture"))
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
    }
    return render_page(request, "pools/pool_detail.html", context)


@permission_required("pools.add_pool", raise_exception=True)
@require_http_methods(["GET", "POST"])
def pool_create(request):
    return form_page(
        request, form_class=PoolForm, noun=gettext("Pool"), template="pools/pool_form.html"
    )


@permission_required("pools.change_pool", raise_exception=True)
@require_http_methods(["GET", "POST"])
def pool_edit(request, slug):
    pool = get_object_or_404(Pool, slug=slug)
    service_period = pool.service_period
    response = form_page(
        request,
        form_class=PoolForm,
        noun=gettext("Pool"),
        template="pools/pool_form.html",
        instance=pool,
    )
    # A saved form redirects; a refused one has still copied its valid fields onto ``pool``.
    if response.status_code == 302 and pool.service_period != service_period:
        service_period_changed.send(sender=Pool, pool=pool)
    return response


@permission_required("pools.delete_pool", raise_exception=True)
@require_http_methods(["GET", "POST"])
def pool_delete(request, slug):
    pool = get_object_or_404(Pool, slug=slug)
    return delete_page(
        request,
        obj=pool,
        noun=gettext("Pool"),
        blocking=list(pool.workloads.order_by("name")),
        blocking_label=gettext("workloads"),
        list_url="pools:pool_list",
        cancel_url=pool.get_absolute_url(),
        pretitle=gettext("Pools"),
        usage_history=pool.usage_history(),
        archive_url=reverse("pools:pool_archive", kwargs={"slug": pool.slug}),
    )


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


@permission_required("pools.change_pool", raise_exception=True)
@require_POST
def pool_archive(request, slug):
    return _set_archived(request, get_object_or_404(Pool, slug=slug), archived=True)


@permission_required("pools.change_pool", raise_exception=True)
@require_POST
def pool_restore(request, slug):
    return _set_archived(request, get_object_or_404(Pool, slug=slug), archived=False)


@require_GET
def workload_list(request):
    workload_filter = WorkloadFilter(request.GET, queryset=Workload.objects.with_pool())
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
    workload = get_object_or_404(Workload.objects.with_pool(), slug=slug)
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
        form_class=WorkloadForm,
        noun=gettext("Workload"),
        template="pools/workload_form.html",
        initial=initial,
    )


@permission_required("pools.change_workload", raise_exception=True)
@require_http_methods(["GET", "POST"])
def workload_edit(request, slug):
    workload = get_object_or_404(Workload, slug=slug)
    return form_page(
        request,
        form_class=WorkloadForm,
        noun=gettext("Workload"),
        template="pools/workload_form.html",
        instance=workload,
    )


@permission_required("pools.delete_workload", raise_exception=True)
@require_http_methods(["GET", "POST"])
def workload_delete(request, slug):
    workload = get_object_or_404(Workload, slug=slug)
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


@permission_required("pools.change_workload", raise_exception=True)
@require_POST
def workload_archive(request, slug):
    workload = get_object_or_404(Workload, slug=slug)
    return _set_archived(request, workload, archived=True)


@permission_required("pools.change_workload", raise_exception=True)
@require_POST
def workload_restore(request, slug):
    workload = get_object_or_404(Workload, slug=slug)
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
        workload = Workload.objects.with_pool().filter(slug=request.GET.get("workload")).first()
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
