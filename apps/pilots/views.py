from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods

from apps.core.crud import ObjectViews
from apps.core.htmx import render_page
from apps.core.tables import configure_table
from apps.core.texts import translated
from apps.pilots import selectors, services
from apps.pilots.forms import PilotUploadForm
from apps.pilots.models import PilotResult
from apps.pilots.parsers import BenchmarkFormatError
from apps.pilots.tables import PilotTable
from apps.pools.views import workload_views


class PilotViews(ObjectViews):
    """A workload's pilot results: a pilot of a workload out of scope is a 404."""

    model = PilotResult
    name = "pilot"
    noun = gettext_lazy("Pilot result")
    lookup = {"slug": "workload__slug", "pk": "pk"}
    related = ("workload",)

    def objects(self, request):
        return PilotResult.objects.filter(workload__in=workload_views.objects(request))

    def delete_options(self, request, result):
        return {
            "list_url": result.get_absolute_url(),
            "pretitle": result.workload.name,
        }


pilot_views = PilotViews()


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


@workload_views.object_view(objects=workload_views.with_pool)
@require_http_methods(["GET", "POST"])
def pilot_list(request, workload):
    """The workload's measured benchmarks, compared by cost per 10⁶ output tokens; POST
    imports a result file (needs the permission to add pilot results)."""
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
        "pool_missing_rate": selectors.pool_usd_price(workload).missing_text,
    }
    return render_page(
        request,
        "pilots/pilot_list.html",
        context,
        fragments={"pilot-table": "pilot-table"},
        status=status,
    )


@workload_views.object_view(objects=workload_views.with_pool)
@require_GET
def workload_fit(request, workload):
    """The workload page's "Measured beside the ceiling" panel: each pilot's output
    tokens/s per GPU beside what memory bandwidth allows at the workload's settings, and
    the cost of each; loaded by the page once it is shown."""
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


pilot_delete = pilot_views.delete_view()
