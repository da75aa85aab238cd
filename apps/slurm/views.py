from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse_lazy
from django.utils.translation import gettext, gettext_lazy, ngettext
from django.views.decorators.http import require_GET, require_http_methods

from apps.accounts.scope import scope_of
from apps.core.crud import ObjectViews
from apps.core.htmx import render_page
from apps.core.sentences import from_data
from apps.core.texts import translated
from apps.slurm.forms import SlurmImportForm, SlurmJobFilterForm, SlurmMappingRuleForm
from apps.slurm.mapping import remap_jobs, rules_in
from apps.slurm.models import SlurmImport, SlurmJob, SlurmMappingRule
from apps.slurm.services import import_sacct

PAGE_SIZE = 50
# ?sort= names: the column a page header sorts by.
SORTS = {
    "job": "job_id",
    "user": "user",
    "account": "account",
    "partition": "partition",
    "state": "state",
    "start": "start",
    "elapsed": "elapsed_seconds",
    "gpus": "gpus",
    "gpu_hours": "gpu_hours",
}


def _require_import(request):
    if not request.user.has_perm("slurm.add_slurmimport"):
        raise PermissionDenied


@require_http_methods(["GET", "POST"])
def slurm_import(request):
    _require_import(request)
    initial = {"cluster": request.GET.get("cluster")} if request.GET.get("cluster") else None
    form = SlurmImportForm(request.POST or None, request.FILES or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        result = import_sacct(
            form.cleaned_data["cluster"],
            form.cleaned_data["sacct_text"],
            user=request.user,
            source=SlurmImport.Source.UPLOAD,
            file_name=form.cleaned_data["file_name"],
        )
        messages.success(
            request,
            gettext(
                "Jobs added: %(accepted)s; updated: %(updated)s; duplicates: %(duplicates)s; "
                "lines refused: %(rejected)s."
            )
            % {
                "accepted": result.accepted,
                "updated": result.updated,
                "duplicates": result.duplicates,
                "rejected": result.rejected,
            },
        )
        return redirect("slurm:import_detail", pk=result.record.pk)
    recent = SlurmImport.objects.select_related("cluster", "imported_by")[:10]
    return render_page(request, "slurm/import.html", {"form": form, "recent": recent})


@require_GET
def slurm_import_detail(request, pk):
    record = get_object_or_404(SlurmImport.objects.select_related("cluster", "imported_by"), pk=pk)
    errors = [
        {
            "line": error["line"],
            "message": translated(from_data(error["parts"])[0])
            if error.get("parts")
            else error["message"],
        }
        for error in record.errors
    ]
    totals = record.jobs.aggregate(count=Count("pk"), gpu_hours=Sum("gpu_hours"))
    return render_page(
        request,
        "slurm/import_detail.html",
        {"record": record, "errors": errors, "totals": totals},
    )


@require_GET
def job_list(request):
    form = SlurmJobFilterForm(request.GET or None)
    jobs = SlurmJob.objects.select_related("cluster", "workload__pool", "team")
    if form.is_valid():
        data = form.cleaned_data
        if data["cluster"]:
            jobs = jobs.filter(cluster=data["cluster"])
        for name in ("user", "account"):
            if data[name]:
                jobs = jobs.filter(**{name: data[name].strip()})
        if data["state"]:
            jobs = jobs.filter(state=data["state"].strip().upper())
        if data["mapping"] == "mapped":
            jobs = jobs.filter(workload__isnull=False)
        elif data["mapping"] == "unmapped":
            jobs = jobs.filter(workload__isnull=True)
    sort = request.GET.get("sort", "-start")
    field = SORTS.get(sort.removeprefix("-"))
    if field is None:
        sort, field = "-start", "start"
    ordering = (
        F(field).desc(nulls_last=True) if sort.startswith("-") else F(field).asc(nulls_last=True)
    )
    jobs = jobs.order_by(ordering, "job_id")
    totals = jobs.aggregate(
        count=Count("pk"),
        gpu_hours=Sum("gpu_hours"),
        unmapped=Count("pk", filter=Q(workload__isnull=True)),
    )
    page = Paginator(jobs, PAGE_SIZE).get_page(request.GET.get("page"))
    scope = scope_of(request.user)
    for job in page.object_list:
        # Another team's workload and team are not named, as in the cost report.
        job.workload_visible = job.workload is not None and scope.covers_team(
            job.workload.effective_team_id
        )
        job.team_visible = job.team_id is not None and scope.covers_team(job.team_id)
    query = request.GET.copy()
    query.pop("page", None)
    sort_query = request.GET.copy()
    sort_query.pop("page", None)
    sort_query.pop("sort", None)
    context = {
        "form": form,
        "page": page,
        "jobs": page.object_list,
        "totals": totals,
        "sort": sort,
        "query_without_page": query.urlencode(),
        "query_without_sort": sort_query.urlencode(),
        "has_jobs": SlurmJob.objects.exists(),
        "unmapped_query": _with_mapping(request, "unmapped"),
    }
    return render_page(request, "slurm/job_list.html", context)


def _with_mapping(request, value: str) -> str:
    query = request.GET.copy()
    query.pop("page", None)
    query["mapping"] = value
    return query.urlencode()


# --- mapping rules ----------------------------------------------------------------------


def _remapped_message(count: int) -> str:
    return ngettext(
        "%(count)s job re-mapped by the rules as they are now.",
        "%(count)s jobs re-mapped by the rules as they are now.",
        count,
    ) % {"count": count}


class SlurmMappingRuleViews(ObjectViews):
    """Rules are fleet-wide (they decide whose costs jobs are): the Technical lead role
    edits them; every change re-maps the stored jobs in the same transaction."""

    model = SlurmMappingRule
    name = "rule"
    noun = gettext_lazy("Mapping rule")
    lookup = {"pk": "pk"}
    related = ("cluster", "workload", "team")
    template = "slurm/rule_form.html"
    list_url = "slurm:rule_list"
    pretitle = gettext_lazy("Slurm mapping rules")

    def objects(self, request):
        return rules_in(scope_of(request.user))

    def form_response(self, request, obj, parent):
        form = SlurmMappingRuleForm(
            request.POST or None, instance=obj, scope=scope_of(request.user)
        )
        if request.method == "POST" and form.is_valid():
            with transaction.atomic():
                rule = form.save()
                count = remap_jobs()
            saved = gettext("Rule %(rule)s saved.") % {"rule": rule}
            messages.success(request, f"{saved} {_remapped_message(count)}")
            return redirect("slurm:rule_list")
        return render_page(request, self.template, {"form": form, "object": obj})

    def delete_options(self, request, rule):
        def delete():
            with transaction.atomic():
                rule.delete()
                count = remap_jobs()
            messages.info(request, _remapped_message(count))

        return {"delete": delete, "cancel_url": reverse_lazy("slurm:rule_list")}


rule_views = SlurmMappingRuleViews()
rule_create = rule_views.create_view()
rule_edit = rule_views.edit_view()
rule_delete = rule_views.delete_view()


@require_GET
def rule_list(request):
    rules = (
        rules_in(scope_of(request.user))
        .select_related("cluster", "workload", "team")
        .order_by("priority", "id")
    )
    jobs = SlurmJob.objects.aggregate(
        count=Count("pk"), unmapped=Count("pk", filter=Q(workload__isnull=True))
    )
    return render_page(request, "slurm/rule_list.html", {"rules": rules, "jobs": jobs})
