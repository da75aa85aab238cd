from datetime import UTC, datetime, time, timedelta

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse_lazy
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy, ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.scope import scope_of
from apps.core.crud import ObjectViews
from apps.core.htmx import render_page
from apps.core.outbox import mark_waiting
from apps.core.sentences import from_data
from apps.core.texts import translated
from apps.slurm.efficiency import UNUSED_UTILISATION_PCT, grouped, job_efficiency, week_start
from apps.slurm.exports import efficiency_response
from apps.slurm.forms import (
    EfficiencyFilterForm,
    SlurmImportForm,
    SlurmJobFilterForm,
    SlurmMappingRuleForm,
)
from apps.slurm.mapping import rules_in, shown_mapping
from apps.slurm.models import SlurmImport, SlurmJob, SlurmMappingRule, SlurmRemap
from apps.slurm.remap import latest_remap, request_remap
from apps.slurm.services import import_sacct
from apps.slurm.tasks import remap_jobs_task

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
        job.workload_visible, job.team_visible = shown_mapping(job, scope)
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


def _remap_message(remap: SlurmRemap) -> str:
    """What the page says of the re-map a change started: done inline, or on its way."""
    if remap.status == SlurmRemap.Status.SUCCEEDED:
        return ngettext(
            "%(count)s job re-mapped by the rules as they are now.",
            "%(count)s jobs re-mapped by the rules as they are now.",
            remap.jobs_changed,
        ) % {"count": remap.jobs_changed}
    return gettext("The stored jobs are re-mapped by a worker: this page shows how far it got.")


class SlurmMappingRuleViews(ObjectViews):
    """Rules are fleet-wide (they decide whose costs jobs are): the Technical lead role
    edits them; every change re-maps the stored jobs (apps/slurm/remap.py), in the same
    transaction when they are few, else on a worker."""

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
                remap = request_remap(user=request.user)
            saved = gettext("Rule %(rule)s saved.") % {"rule": rule}
            messages.success(request, f"{saved} {_remap_message(remap)}")
            return redirect("slurm:rule_list")
        return render_page(request, self.template, {"form": form, "object": obj})

    def delete_options(self, request, rule):
        def delete():
            with transaction.atomic():
                rule.delete()
                remap = request_remap(user=request.user)
            messages.info(request, _remap_message(remap))

        return {"delete": delete, "cancel_url": reverse_lazy("slurm:rule_list")}


rule_views = SlurmMappingRuleViews()
rule_create = rule_views.create_view()
rule_edit = rule_views.edit_view()
rule_delete = rule_views.delete_view()


def _may_remap(user) -> bool:
    return any(
        user.has_perm(f"slurm.{action}_slurmmappingrule") for action in ("add", "change", "delete")
    )


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
    remap = latest_remap()
    if remap is not None:
        mark_waiting([remap], remap_jobs_task, not_started=SlurmRemap.Status.QUEUED)
    context = {
        "rules": rules,
        "jobs": jobs,
        "remap": remap,
        "may_remap": _may_remap(request.user),
    }
    return render_page(
        request, "slurm/rule_list.html", context, fragments={"remap-progress": "remap-progress"}
    )


@require_POST
def rule_remap(request):
    """Re-map the stored jobs again (after a failed or interrupted re-map), as a change of
    the rules does."""
    if not _may_remap(request.user):
        raise PermissionDenied
    with transaction.atomic():
        remap = request_remap(user=request.user)
    messages.info(request, _remap_message(remap))
    return redirect("slurm:rule_list")


# ?sort= names of the efficiency table: the figure each sorts by.
EFFICIENCY_SORTS = {
    "name": "name",
    "jobs": "jobs",
    "allocated": "allocated_gpu_hours",
    "busy": "busy_gpu_hours",
    "idle": "idle_gpu_hours",
    "unmeasured": "unmeasured_gpu_hours",
    "ratio": "busy_ratio",
    "cost": "idle_cost_usd",
}
# The largest idle allocations the page ranks, and the jobs under 1 % it lists.
RANKED_JOBS = 20


def _sorted_rows(rows, sort: str):
    """The rows by ``sort`` (a ``-`` prefix: descending), blanks last either way."""
    key = EFFICIENCY_SORTS[sort.removeprefix("-")]
    present = [row for row in rows if row[key] is not None]
    blank = [row for row in rows if row[key] is None]
    present.sort(
        key=lambda row: str(row[key]).casefold() if key == "name" else row[key],
        reverse=sort.startswith("-"),
    )
    return present + blank


def _week_query(request, day) -> str:
    """The page's query for another week: the same cluster, grouping and sort."""
    query = request.GET.copy()
    query.pop("format", None)
    query["week"] = day.isoformat()
    return query.urlencode()


@require_GET
def slurm_efficiency(request):
    form = EfficiencyFilterForm(request.GET or None)
    data = form.cleaned_data if form.is_valid() else {}
    day = data.get("week") or (timezone.now().date() - timedelta(days=7))
    start_day = week_start(day)
    start = datetime.combine(start_day, time(0), tzinfo=UTC)
    end = start + timedelta(days=7)
    group = data.get("group") or "user"
    report = job_efficiency(start, end, cluster=data.get("cluster"))
    # Another team's name is not shown, as on the jobs list; its figures still count.
    scope = scope_of(request.user)
    team_names = {
        team_id: name if scope.covers_team(team_id) else gettext("Another team")
        for team_id, name in report.team_names.items()
        if team_id is not None
    }

    def job_row(job) -> dict:
        return {**job.row(), "team": team_names.get(job.team_id, "")}

    if group == "job":
        rows = [{"name": job.job_id, **job_row(job)} for job in report.ranked_jobs()]
    else:
        if group == "team":
            rows = grouped(report.by_team, team_names)
            for row in rows:
                row["name"] = row["name"] or gettext("no team")
        else:
            # A Slurm user or account is its cluster's: one row per cluster and name.
            figures = report.by_user if group == "user" else report.by_account
            rows = grouped(figures, clusters=report.cluster_names)
    sort = request.GET.get("sort", "-cost")
    if sort.removeprefix("-") not in EFFICIENCY_SORTS:
        sort = "-cost"
    rows = _sorted_rows(rows, sort)
    if request.GET.get("format") == "csv":
        return efficiency_response(rows, group=group, week=start_day.isoformat())
    sort_query = request.GET.copy()
    sort_query.pop("sort", None)
    sort_query.pop("format", None)
    csv_query = request.GET.copy()
    csv_query["format"] = "csv"
    context = {
        "form": form,
        "group": group,
        "rows": rows,
        "start": start,
        "last_day": end - timedelta(days=1),
        "previous_week": _week_query(request, start_day - timedelta(days=7)),
        "next_week": _week_query(request, start_day + timedelta(days=7)),
        "total": report.total.shown(),
        "ranked": [job_row(job) for job in report.ranked_jobs()[:RANKED_JOBS] if job.figures.idle],
        "unused": [job_row(job) for job in report.unused_jobs[:RANKED_JOBS]],
        "missing_rates": sorted(report.missing_rates),
        "sort": sort,
        "query_without_sort": sort_query.urlencode(),
        "csv_query": csv_query.urlencode(),
        "unused_pct": UNUSED_UTILISATION_PCT,
    }
    return render_page(request, "slurm/efficiency.html", context)
