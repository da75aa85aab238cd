from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy, ngettext
from django.views.decorators.http import require_GET

from apps.accounts.scope import scope_of
from apps.catalog.models import GpuModel
from apps.core.crud import ObjectViews
from apps.core.history import history_rows
from apps.core.htmx import render_page
from apps.core.tables import configure_table
from apps.core.texts import translated
from apps.currencies.codes import USD
from apps.currencies.rates import usd_price, usd_rates_at
from apps.pools import list_columns
from apps.pools.assessment import assess_workload
from apps.pools.charts import build_memory_breakdown_figure
from apps.pools.estimates import EstimateError, run_memory_estimate
from apps.pools.filters import PoolFilter, WorkloadFilter
from apps.pools.forms import CalculatorForm, PoolForm, WorkloadForm
from apps.pools.models import Pool, Workload
from apps.pools.prices import price_history
from apps.pools.signals import service_period_changed
from apps.pools.tables import PoolTable, WorkloadTable, with_price_per_hour


class PoolViews(ObjectViews):
    model = Pool
    noun = gettext_lazy("Pool")
    form = PoolForm
    template = "pools/pool_form.html"
    list_url = "pools:pool_list"
    pretitle = gettext_lazy("Pools")
    archived_message = gettext_lazy(
        "Pool %(name)s archived: hidden from lists, its history kept in every report, "
        "export and API answer."
    )
    restored_message = gettext_lazy("Pool %(name)s restored.")

    def objects(self, request):
        """The pools in the requesting user's scope: any other is a 404."""
        return Pool.objects.in_scope(scope_of(request.user))

    def form_kwargs(self, request, parent):
        return {"scope": scope_of(request.user), "user": request.user}

    def initial(self, request, parent):
        # One team of one's own is the likely owner; more, or none, and the person chooses.
        scope = scope_of(request.user)
        return {"team": next(iter(scope.team_ids))} if len(scope.team_ids) == 1 else None

    def form_response(self, request, obj, parent):
        service_period = obj.service_period if obj is not None else None
        response = super().form_response(request, obj, parent)
        # A saved form redirects; a refused one has still copied its valid fields onto ``obj``.
        if obj is not None and response.status_code == 302 and obj.service_period != service_period:
            service_period_changed.send(sender=Pool, pool=obj)
        return response

    def delete_options(self, request, pool):
        return {
            "blocking": _blocking_workloads(request, pool),
            "blocking_label": gettext("workloads"),
            "usage_history": pool.usage_history(),
            "archive_url": reverse("pools:pool_archive", kwargs={"slug": pool.slug}),
        }


class WorkloadViews(ObjectViews):
    model = Workload
    noun = gettext_lazy("Workload")
    form = WorkloadForm
    template = "pools/workload_form.html"
    list_url = "pools:workload_list"
    pretitle = gettext_lazy("Workloads")
    archived_message = gettext_lazy(
        "Workload %(name)s archived: hidden from lists, its history kept in every "
        "report, export and API answer."
    )
    restored_message = gettext_lazy("Workload %(name)s restored.")

    def objects(self, request):
        """The workloads in the requesting user's scope: any other is a 404."""
        return Workload.objects.in_scope(scope_of(request.user))

    def form_kwargs(self, request, parent):
        return {"scope": scope_of(request.user)}

    def initial(self, request, parent):
        return {"pool": request.GET["pool"]} if request.GET.get("pool") else None

    def with_pool(self, request):
        """The workloads in scope with their pool and GPU model, for pages that read them."""
        return self.objects(request).with_pool()

    def delete_options(self, request, workload):
        return {
            "usage_history": workload.usage_history(),
            "archive_url": reverse("pools:workload_archive", kwargs={"slug": workload.slug}),
        }


pool_views = PoolViews()
workload_views = WorkloadViews()


@require_GET
def pool_list(request):
    scope = scope_of(request.user)
    # Archived pools are hidden unless the filter's "Show" asks for them.
    pool_filter = PoolFilter(request.GET, queryset=pool_views.objects(request), request=request)
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


@pool_views.object_view(related=("owner", "gpu_model", "team", "cluster"))
@require_GET
def pool_detail(request, pool):
    # A shared pool may run other teams' workloads: only those in scope are listed.
    workloads = list(
        workload_views.objects(request)
        .filter(pool=pool)
        .select_related("owner", "model_architecture", "team")
    )
    gpu_catalog = list(GpuModel.objects.all())
    rates = usd_rates_at({pool.currency}, timezone.now())
    rows = []
    for workload in workloads:
        workload.pool = pool  # already loaded: saves one query per workload
        rows.append((workload, assess_workload(workload, gpu_catalog=gpu_catalog, rates=rates)))
    context = {
        "pool": pool,
        "rows": rows,
        "price_breakdown": pool.price_breakdown(),
        # The effective price in US dollars at this month's rate, for a pool in another
        # currency (the rates read for the assessments above).
        "usd_price": None if pool.currency == USD else usd_price(pool, timezone.now(), rates),
        "findings_count": sum(len(assessment.findings) for _, assessment in rows),
        "history": history_rows(pool),
        "price_periods": price_history(pool),
    }
    return render_page(request, "pools/pool_detail.html", context)


pool_create = pool_views.create_view()
pool_edit = pool_views.edit_view()
pool_delete = pool_views.delete_view()
pool_archive = pool_views.archive_view(archived=True)
pool_restore = pool_views.archive_view(archived=False)


def _blocking_workloads(request, pool) -> list:
    """The workloads that keep ``pool`` from being deleted: those in scope by name, the
    others of a shared pool as one line that names no other team's workload."""
    shown = list(workload_views.objects(request).filter(pool=pool).order_by("name"))
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


@require_GET
def workload_list(request):
    workload_filter = WorkloadFilter(
        request.GET, queryset=workload_views.objects(request).with_pool(), request=request
    )
    table = WorkloadTable(workload_filter.qs)
    page = configure_table(request, table)
    gpu_catalog = list(GpuModel.objects.all())
    rates = usd_rates_at({workload.pool.currency for workload in page}, timezone.now())
    for workload in page:
        workload.assessment = assess_workload(workload, gpu_catalog=gpu_catalog, rates=rates)
    context = {
        "table": table,
        "page": page,
        "filter": workload_filter,
        "archived": request.GET.get("archived", ""),
    }
    return render_page(
        request, "pools/workload_list.html", context, fragments={"workloads": "workloads"}
    )


@workload_views.object_view(
    related=("pool__gpu_model", "owner", "model_architecture", "team", "pool__team")
)
@require_GET
def workload_detail(request, workload):
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


workload_create = workload_views.create_view()
workload_edit = workload_views.edit_view()
workload_delete = workload_views.delete_view()
workload_archive = workload_views.archive_view(archived=True)
workload_restore = workload_views.archive_view(archived=False)


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
        workload = (
            workload_views.objects(request)
            .with_pool()
            .filter(slug=request.GET.get("workload"))
            .first()
        )
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
