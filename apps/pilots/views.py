from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods

from apps.accounts.scope import scope_of
from apps.core.crud import delete_page
from apps.core.htmx import render_page
from apps.core.tables import configure_table
from apps.core.texts import translated
from apps.pilots import selectors, services
from apps.pilots.forms import PilotUploadForm
from apps.pilots.models import PilotResult
from apps.pilots.parsers import BenchmarkFormatError
from apps.pilots.tables import PilotTable
from apps.pools.models import Workload
from apps.pools.scoped import in_scope_or_404


def _workloads(request):
    """The workloads in the requesting user's scope: a pilot of any other is a 404."""
    return Workload.objects.in_scope(scope_of(request.user))


def _workload_named(request, slug, **kwargs):
    return _workloads(request).filter(slug=slug)


def _import(request, workload, form) -> bool:
    """Store the uploaded file's result; False (with the reason on the form) if it does
    not parse."""
    upload = form.cleaned_data["file"]
    try:
        outcome = services.import_benchmark(
            workload=workload,
            gpu_model=form.cleaned_data["gpu_model"],
            gpu_count=form.cleaned_data["gpu_count"],
            source_format=form.cleaned_data["source_format"],
            content=upload.read(),
            filename=upload.name,
            name=form.cleaned_data["name"],
            notes=form.cleaned_data["notes"],
            concurrency=form.cleaned_data["concurrency"],
            benchmark_number=form.cleaned_data["benchmark_number"],
            user=request.user,
        )
    except BenchmarkFormatError as error:
        form.add_error("file", translated(error))
        return False
    if outcome.created:
        messages.success(request, gettext("Imported “%(name)s”.") % {"name": outcome.result.name})
    else:
        messages.info(
            request,
            gettext("This file was already imported as “%(name)s”: nothing changed.")
            % {"name": outcome.result.name},
        )
    return True


@require_http_methods(["GET", "POST"])
def pilot_list(request, slug):
    """The workload's measured benchmarks, compared by cost per 10⁶ output tokens; POST
    imports a result file (needs the permission to add pilot results)."""
    workload = get_object_or_404(_workloads(request).with_pool(), slug=slug)
    may_import = request.user.has_perm("pilots.add_pilotresult")
    status = 200
    form = PilotUploadForm(workload=workload) if may_import else None
    if request.method == "POST":
        if not may_import:
            raise PermissionDenied
        form = PilotUploadForm(request.POST, request.FILES, workload=workload)
        if form.is_valid() and _import(request, workload, form):
            return redirect("pilots:pilot_list", slug=workload.slug)
        status = 400
    table = PilotTable(selectors.pilots_of(workload))
    configure_table(request, table, per_page=None)
    context = {
        "workload": workload,
        "table": table,
        "form": form,
        "pool_price_per_gpu_hour_usd": selectors.price_for(workload, workload.pool.gpu_model)[0],
    }
    return render_page(
        request,
        "pilots/pilot_list.html",
        context,
        fragments={"pilot-table": "pilot-table"},
        status=status,
    )


@require_GET
def workload_fit(request, slug):
    """The workload page's "Measured beside the ceiling" panel: each pilot's output
    tokens/s per GPU beside what memory bandwidth allows at the workload's settings, and
    the cost of each; loaded by the page once it is shown."""
    workload = get_object_or_404(_workloads(request).with_pool(), slug=slug)
    pilots = sorted(
        selectors.pilots_of(workload),
        key=lambda pilot: (pilot.result.gpu_model_id != workload.pool.gpu_model_id, pilot.name),
    )
    context = {
        "workload": workload,
        "pilots": pilots,
        "own_ceiling_tokens_per_second_per_gpu": selectors.decode_ceiling_per_gpu(
            workload, workload.pool.gpu_model
        ),
        "panel_title": gettext("Measured beside the ceiling"),
    }
    return render_page(request, "pilots/workload_fit.html", context, partial="panel")


@in_scope_or_404(_workload_named)
@permission_required("pilots.delete_pilotresult", raise_exception=True)
@require_http_methods(["GET", "POST"])
def pilot_delete(request, slug, pk):
    result = get_object_or_404(
        PilotResult.objects.filter(workload__in=_workloads(request)), workload__slug=slug, pk=pk
    )
    return delete_page(
        request,
        obj=result,
        noun=gettext_lazy("Pilot result"),
        blocking=[],
        blocking_label="",
        list_url=result.get_absolute_url(),
        cancel_url=result.get_absolute_url(),
        pretitle=result.workload.name,
    )
