"""Procurement pages: scenarios, their option lines, the live comparison, price imports
and exports. Procurement users change things; everyone signed in reads."""

from django.contrib import messages
from django.db import transaction
from django.db.models import Count, Max
from django.http import FileResponse, Http404
from django.shortcuts import redirect
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods

from apps.accounts.scope import scope_of
from apps.core.crud import ObjectViews
from apps.core.htmx import fragment_for, render_page
from apps.core.outbox import enqueue, mark_waiting
from apps.core.tables import configure_table
from apps.procurement import charts
from apps.procurement.comparison.price_import import import_prices
from apps.procurement.comparison.services import (
    build_comparison,
    scenario_history,
    scenario_queryset,
)
from apps.procurement.comparison.what_if import what_if_json
from apps.procurement.forms import (
    ExportForm,
    OptionForm,
    PriceImportForm,
    ScenarioForm,
    WhatIfForm,
)
from apps.procurement.models import ComparisonExport, OptionKind, Scenario, ScenarioOption
from apps.procurement.tables import ScenarioTable
from apps.procurement.tasks import generate_export_task

EXPORTS_SHOWN = 20


def scenarios_in(scope):
    """The scenarios of the scope's teams and the shared ones (apps/accounts/scope.py)."""
    return Scenario.objects.filter(scope.team_filter("team"))


class ScenarioViews(ObjectViews):
    model = Scenario
    noun = _lazy("Scenario")
    form = ScenarioForm
    template = "procurement/scenario_form.html"
    list_url = "procurement:scenario_list"
    pretitle = _lazy("Procurement")

    def objects(self, request):
        return scenario_queryset().filter(scope_of(request.user).team_filter("team"))

    def form_kwargs(self, request, parent):
        return {"user": request.user}


scenario_views = ScenarioViews()


class OptionViews(ObjectViews):
    """A scenario's option lines: created under their scenario, in its scope."""

    model = ScenarioOption
    name = "option"
    noun = _lazy("Option")
    lookup = {"slug": "scenario__slug", "pk": "pk"}
    related = ("scenario__demand_workload",)
    parent = scenario_views
    form = OptionForm
    template = "procurement/option_form.html"

    def objects(self, request):
        return ScenarioOption.objects.filter(scope_of(request.user).team_filter("scenario__team"))

    def parent_of(self, option):
        return option.scenario

    def form_kwargs(self, request, scenario):
        return {"scenario": scenario, "scope": scope_of(request.user)}

    def initial(self, request, scenario):
        last = scenario.options.aggregate(last=Max("position"))["last"]
        initial = {"position": (last or 0) + 1}
        if request.GET.get("kind") in OptionKind.values:
            initial["kind"] = request.GET["kind"]
        return initial

    def form_context(self, request, option, scenario):
        return {"scenario": scenario}

    def delete_options(self, request, option):
        scenario_url = option.scenario.get_absolute_url()
        return {
            "list_url": scenario_url,
            "cancel_url": scenario_url,
            "pretitle": option.scenario.name,
        }


class ExportViews(ObjectViews):
    model = ComparisonExport
    lookup = {"pk": "pk"}
    related = ("scenario",)

    def objects(self, request):
        return ComparisonExport.objects.filter(scope_of(request.user).team_filter("scenario__team"))


option_views = OptionViews()
export_views = ExportViews()


@require_GET
def scenario_list(request):
    scenarios = (
        scenarios_in(scope_of(request.user))
        .select_related("created_by", "demand_pool", "demand_workload", "team")
        .annotate(option_count=Count("options", distinct=True))
        .annotate(last_export_at=Max("exports__created_at"))
    )
    table = ScenarioTable(scenarios)
    # Not paginated: a fleet compares a handful of scenarios.
    configure_table(request, table, per_page=None)
    return render_page(
        request,
        "procurement/scenario_list.html",
        {"table": table},
        fragments={"scenarios": "scenarios"},
    )


def _comparison_context(scenario, result):
    results = result.results
    currency = scenario.currency
    hybrid = next((r for r in results if r.cost_by_baseline_gpus), None)
    return {
        "result": result,
        "cost_figure": charts.build_cost_by_option_figure(
            results, currency, scenario.horizon_months
        )
        if results
        else None,
        "unit_figure": charts.build_cost_per_unit_figure(results, currency) if results else None,
        "hybrid_figure": charts.build_hybrid_curve_figure(hybrid, currency) if hybrid else None,
        "demand_figure": charts.build_demand_figure(
            result.demand, result.info.hourly_times, results
        )
        if result.demand
        else None,
    }


@scenario_views.object_view()
@require_GET
def scenario_detail(request, scenario):
    what_if = WhatIfForm.for_scenario(
        scenario, request.GET if "horizon_months" in request.GET else None
    )
    changed = {}
    if what_if.is_bound and what_if.is_valid():
        changed = what_if.apply(scenario)
    error_lines = [
        (name, what_if.fields[name].label, error)
        for name, errors in (what_if.errors.items() if what_if.is_bound else [])
        for error in errors
    ]
    result = build_comparison(scenario)
    result.what_if_saved = changed
    # Options that miss a requirement stay listed and marked unless the page asks for
    # only those that meet them all.
    meets_all_only = request.GET.get("meets") == "all"
    context = {
        "meets_all_only": meets_all_only,
        "shown_rows": [row for row in result.rows if row.meets_requirements or not meets_all_only],
        "scenario": scenario,
        "what_if": what_if,
        "what_if_changed": changed,
        # Sent with the export buttons, so a file is made from the inputs on screen.
        "what_if_values": what_if_json(scenario, WhatIfForm.FIELDS) if changed else {},
        "what_if_lines": [
            (what_if.fields[name].label, getattr(scenario, name), saved)
            for name, saved in changed.items()
        ],
        "error_lines": error_lines,
        **_comparison_context(scenario, result),
    }
    # The what-if form swaps only the comparison: the rest of the page is not read.
    fragments = {"comparison": "comparison"}
    if fragment_for(request, fragments):
        return render_page(
            request, "procurement/scenario_detail.html", context, fragments=fragments
        )
    context["history"] = scenario_history(scenario)
    context["exports"] = mark_waiting(
        scenario.exports.select_related("created_by")[:EXPORTS_SHOWN],
        generate_export_task,
        not_started=ComparisonExport.Status.PENDING,
    )
    context["export_form"] = ExportForm()
    return render_page(request, "procurement/scenario_detail.html", context)


scenario_create = scenario_views.create_view()
scenario_edit = scenario_views.edit_view()
scenario_delete = scenario_views.delete_view()
option_create = option_views.create_view()
option_edit = option_views.edit_view()
option_delete = option_views.delete_view()


@scenario_views.object_view(permission="procurement.add_scenariooption")
@require_http_methods(["GET", "POST"])
def price_import(request, scenario):
    summary = None
    if request.method == "POST":
        form = PriceImportForm(request.POST, request.FILES)
        if form.is_valid():
            summary = import_prices(
                scenario,
                form.catalog_rows,
                provider=form.cleaned_data["provider"],
                region=form.cleaned_data["region"].strip(),
                gpu_models=form.cleaned_data["gpu_models"],
            )
            if summary.created or summary.updated:
                count = len(summary.created) + len(summary.updated)
                messages.success(
                    request,
                    ngettext(
                        "%(count)d on-demand option priced from the catalog.",
                        "%(count)d on-demand options priced from the catalog.",
                        count,
                    )
                    % {"count": count},
                )
    else:
        form = PriceImportForm(initial={"gpu_models": _scenario_gpu_ids(scenario)})
    return render_page(
        request,
        "procurement/price_import.html",
        {"form": form, "scenario": scenario, "summary": summary},
    )


def _scenario_gpu_ids(scenario):
    ids = set(scenario.options.values_list("gpu_model_id", flat=True))
    if scenario.reference_gpu_model_id:
        ids.add(scenario.reference_gpu_model_id)
    return sorted(ids)


@scenario_views.object_view(permission="procurement.add_comparisonexport")
@require_http_methods(["GET", "POST"])
def export_create(request, scenario):
    form = ExportForm(request.POST or None)
    what_if = {}
    if request.method == "POST" and any(name in request.POST for name in WhatIfForm.FIELDS):
        what_if_form = WhatIfForm.for_scenario(scenario, request.POST)
        if not what_if_form.is_valid():
            problems = "; ".join(
                f"{what_if_form.fields[name].label}: {' '.join(errors)}"
                for name, errors in what_if_form.errors.items()
            )
            messages.error(
                request,
                _("Nothing was exported: the what-if inputs are not valid (%(problems)s).")
                % {"problems": problems},
            )
            return redirect(scenario)
        what_if = what_if_json(scenario, what_if_form.apply(scenario))
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            export = ComparisonExport.objects.create(
                scenario=scenario,
                format=form.cleaned_data["format"],
                what_if=what_if,
                created_by=request.user,
                language=translation.get_language() or ComparisonExport.DEFAULT_LANGUAGE,
            )
            # The worker has no request: it writes the headers and titles in the language kept
            # on the export.
            enqueue(generate_export_task, export.pk)
        return redirect(export)
    return render_page(
        request, "procurement/export_form.html", {"form": form, "scenario": scenario}
    )


@export_views.object_view(related=("scenario", "created_by"))
@require_GET
def export_detail(request, export):
    mark_waiting([export], generate_export_task, not_started=ComparisonExport.Status.PENDING)
    context = {"export": export}
    return render_page(
        request,
        "procurement/export_detail.html",
        context,
        fragments={"export-progress": "export-progress"},
    )


@export_views.object_view()
@require_GET
def export_download(request, export):
    if export.status != ComparisonExport.Status.SUCCEEDED or not export.file:
        raise Http404(_("This export has no file (yet)."))
    try:
        handle = export.file.open("rb")
    except FileNotFoundError:
        raise Http404(_("The export's file is gone from storage; export again.")) from None
    return FileResponse(handle, as_attachment=True, filename=export.filename)
