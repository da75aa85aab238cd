from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import FileResponse, Http404
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.scope import scope_of
from apps.backups import at_risk, services
from apps.backups.forms import BackupPolicyForm, BackupVersionForm, RestoreDrillForm
from apps.backups.models import BackupPolicy, BackupVersion, RestoreDrill
from apps.backups.recovery_units import page_units
from apps.backups.tables import PolicyTable
from apps.core.crud import ObjectViews
from apps.core.history import history_rows
from apps.core.htmx import render_page
from apps.core.tables import configure_table
from apps.pools.models import Workload
from apps.pools.querysets import workload_scope_filter
from apps.pools.views import workload_views

VERSIONS_PAGE_SIZE = 10
DRILLS_PAGE_SIZE = 10


# Backups belong to their workload's team: a policy, version or drill of a workload out of
# the requesting user's scope answers 404, as the workload's own page does.


def _policies(request):
    return BackupPolicy.objects.filter(workload_scope_filter(scope_of(request.user), "workload__"))


def _versions(request):
    return BackupVersion.objects.filter(workload_scope_filter(scope_of(request.user), "workload__"))


def _drills(request):
    return RestoreDrill.objects.filter(
        workload_scope_filter(scope_of(request.user), "policy__workload__")
    )


class PolicyViews(ObjectViews):
    """A workload's backup policy: named by the workload's slug, created under it."""

    model = BackupPolicy
    name = "policy"
    noun = gettext_lazy("Backup policy")
    lookup = {"slug": "workload__slug"}
    related = ("workload__pool",)
    parent = workload_views
    form = BackupPolicyForm
    template = "backups/policy_form.html"
    list_url = "backups:policy_list"
    pretitle = gettext_lazy("Backups")

    def objects(self, request):
        return _policies(request)

    def parent_of(self, policy):
        return policy.workload

    def form_kwargs(self, request, workload):
        return {"workload": workload}

    def form_context(self, request, policy, workload):
        return {"workload": workload}

    def form_response(self, request, policy, workload):
        if policy is None and BackupPolicy.objects.filter(workload=workload).exists():
            return redirect("backups:policy_edit", slug=workload.slug)
        return super().form_response(request, policy, workload)


class DrillViews(ObjectViews):
    model = RestoreDrill
    name = "drill"
    noun = gettext_lazy("Drill")
    lookup = {"pk": "pk"}
    related = ("policy__workload",)

    def objects(self, request):
        return _drills(request)

    def delete_options(self, request, drill):
        policy = drill.policy
        return {
            "list_url": policy.get_absolute_url(),
            "pretitle": gettext("Backups · %(name)s") % {"name": policy.workload.name},
            # The policy's next drill date and overdue flag follow from its drills.
            "delete": lambda: services.delete_drill(drill),
        }


class VersionViews(ObjectViews):
    model = BackupVersion
    name = "version"
    noun = gettext_lazy("Version")
    lookup = {"pk": "pk"}
    related = ("workload",)
    list_url = "backups:policy_list"

    def objects(self, request):
        return _versions(request)

    def delete_options(self, request, version):
        return {
            "blocking": list(version.drills.order_by("-finished_at")),
            "blocking_label": "recorded drills (mark the version purged instead)",
            "pretitle": gettext("Backups · %(name)s") % {"name": version.workload.name},
        }


policy_views = PolicyViews()
drill_views = DrillViews()
version_views = VersionViews()
WORKLOAD_WITH_POOL = ("pool__gpu_model", "owner", "model_architecture")


def _policies_with_status(request):
    return _policies(request).with_status()


@require_GET
def policy_list(request):
    """The fleet view: overdue and failing policies first, then by risk."""
    now = timezone.now()
    scope = scope_of(request.user)
    table = PolicyTable(_policies(request).ranked_by_risk(now))
    page = configure_table(request, table)
    for policy in page:
        policy.coverage_assessment = policy.coverage()
    context = {
        "table": table,
        "page": page,
        "summary": services.overdue_and_failing_summary(now, scope=scope),
        "uncovered_workloads": Workload.objects.in_scope(scope)
        .filter(backup_policy__isnull=True)
        .select_related("pool")
        .order_by("name"),
        "now": now,
    }
    return render_page(
        request, "backups/policy_list.html", context, fragments={"policies": "policies"}
    )


def _policy_page_context(request, policy, drill_form=None):
    workload = policy.workload
    can_record = request.user.has_perm("backups.add_restoredrill")
    drill_blocked = services.drill_blocker(policy) if can_record else None
    versions = BackupVersion.objects.filter(workload=workload).prefetch_related("checksums")
    drills = policy.drills.select_related("version", "performed_by")
    version_page = Paginator(versions, VERSIONS_PAGE_SIZE).get_page(request.GET.get("versions"))
    drill_page = Paginator(drills, DRILLS_PAGE_SIZE).get_page(request.GET.get("drills"))
    latest_drill = drills.first()
    return {
        **page_units(
            policies=[policy], drills=[*drill_page, *([latest_drill] if latest_drill else [])]
        ),
        "policy": policy,
        "workload": workload,
        "coverage": policy.coverage(),
        "advice": services.checkpoint_advice(policy),
        "release_lines": services.release_lines(workload) if not workload.is_training else [],
        "version_page": version_page,
        "version_rows": [
            (version, version.comparable_with(policy.current_data_version))
            for version in version_page
        ],
        "drill_page": drill_page,
        "latest_drill": latest_drill,
        "drill_blocked": drill_blocked,
        "drill_form": drill_form
        if drill_form is not None
        else (
            RestoreDrillForm(policy=policy, initial=_drill_initial(policy))
            if can_record and drill_blocked is None
            else None
        ),
        "history": services.policy_history(policy),
        "now": timezone.now(),
    }


def _drill_initial(policy):
    latest = BackupVersion.objects.kept().filter(workload_id=policy.workload_id).first()
    initial = {"resumed": True, "outcome": "restored"}
    if latest is not None:
        initial.update(version=latest.pk, restored_from_tier=latest.tier)
    return initial


@policy_views.object_view(objects=_policies_with_status)
@require_GET
def policy_detail(request, policy):
    return render_page(request, "backups/policy_detail.html", _policy_page_context(request, policy))


policy_create = policy_views.create_view()
policy_edit = policy_views.edit_view()
policy_delete = policy_views.delete_view()


@policy_views.object_view(permission="backups.add_restoredrill", objects=_policies_with_status)
@require_http_methods(["GET", "POST"])
def drill_create(request, policy):
    """The drill form on the policy page posts here with htmx and gets the compliance
    column back (drill recorded, status and list updated) without a reload, and with a
    recorded drill the history card out of band."""
    blocked = services.drill_blocker(policy)
    if blocked:
        # Say what to register first, rather than a form whose version list is empty.
        context = {"policy": policy, "workload": policy.workload, "drill_blocked": blocked}
        if request.htmx:
            context = _policy_page_context(request, policy)
            return render_page(request, "backups/policy_detail.html", context, partial="compliance")
        status = 400 if request.method == "POST" else 200
        return render_page(request, "backups/drill_form.html", context, status=status)
    form = RestoreDrillForm(
        request.POST or None, request.FILES or None, policy=policy, initial=_drill_initial(policy)
    )
    if request.method == "POST":
        if form.is_valid():
            try:
                drill = form.save(user=request.user)
            except ValidationError as error:
                form.add_error(None, error)
            else:
                if not request.htmx:
                    messages.success(
                        request,
                        gettext("Drill recorded: %(verdict)s")
                        % {"verdict": drill.verdict_sentence},
                    )
                    return redirect(policy)
                # Read again: the drill just recorded changes the policy's status.
                policy = (
                    _policies_with_status(request)
                    .select_related("workload__pool")
                    .get(pk=policy.pk)
                )
                context = _policy_page_context(request, policy)
                context.update(just_recorded=drill, history_out_of_band=True)
                return render_page(
                    request, "backups/policy_detail.html", context, partial="compliance"
                )
        if request.htmx:
            # 200, not 422: htmx swaps only successful responses, and the errors must show.
            context = _policy_page_context(request, policy, drill_form=form)
            return render_page(request, "backups/policy_detail.html", context, partial="compliance")
    return render_page(
        request,
        "backups/drill_form.html",
        {"form": form, "policy": policy, "workload": policy.workload},
    )


@drill_views.object_view(related=("policy__workload", "version", "performed_by"))
@require_GET
def drill_detail(request, drill):
    return render_page(
        request,
        "backups/drill_detail.html",
        {"drill": drill, "history": history_rows(drill), **page_units(drills=[drill])},
    )


@drill_views.object_view(related=())
@require_GET
def drill_evidence(request, drill):
    """Evidence is served to signed-in users only (never from a public media URL), and
    as a download so an uploaded HTML file cannot run in the dashboard's origin."""
    if not drill.evidence:
        raise Http404(gettext("This drill has no evidence attached."))
    try:
        handle = drill.evidence.open("rb")
    except FileNotFoundError as error:
        raise Http404(gettext("The evidence file is missing from storage.")) from error
    filename = drill.evidence.name.rsplit("/", 1)[-1]
    return FileResponse(handle, as_attachment=True, filename=filename)


drill_delete = drill_views.delete_view()


@version_views.object_view(related=("workload__pool", "workload__backup_policy", "registered_by"))
@require_GET
def version_detail(request, version):
    policy = getattr(version.workload, "backup_policy", None)
    context = {
        "version": version,
        "policy": policy,
        "comparable": version.comparable_with(policy.current_data_version if policy else ""),
        "checksums": version.checksums.all(),
        "drills": version.drills.order_by("-finished_at")[:10],
        "previous_stable": services.previous_stable(version) if version.is_release else None,
        "history": history_rows(version),
    }
    return render_page(request, "backups/version_detail.html", context)


@workload_views.object_view(permission="backups.add_backupversion", related=WORKLOAD_WITH_POOL)
@require_http_methods(["GET", "POST"])
def version_create(request, workload):
    form = BackupVersionForm(request.POST or None, workload=workload)
    if request.method == "POST" and form.is_valid():
        version = form.save(user=request.user)
        messages.success(request, gettext("Version %(name)s registered.") % {"name": version.name})
        return redirect(version)
    return render_page(
        request, "backups/version_form.html", {"form": form, "workload": workload, "object": None}
    )


@version_views.object_view("change")
@require_http_methods(["GET", "POST"])
def version_edit(request, version):
    form = BackupVersionForm(request.POST or None, instance=version, workload=version.workload)
    if request.method == "POST" and form.is_valid():
        version = form.save(user=request.user)
        messages.success(request, gettext("Version %(name)s saved.") % {"name": version.name})
        return redirect(version)
    return render_page(
        request,
        "backups/version_form.html",
        {"form": form, "workload": version.workload, "object": version},
    )


version_delete = version_views.delete_view()


def _may_mark_stable(request):
    if not request.user.has_perm("backups.change_backupversion"):
        raise PermissionDenied(gettext("Only Ops mark releases stable."))


@version_views.object_view(permission=_may_mark_stable, related=())
@require_POST
def version_mark_stable(request, version):
    try:
        services.mark_stable(version)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(
            request, gettext("%(name)s is now the stable release.") % {"name": version.name}
        )
    return redirect(version)


@workload_views.object_view(related=("pool",))
@require_GET
def workload_at_risk(request, workload):
    """The workload page's "Dollars at risk" card: what a failure now would cost to redo,
    from the newest checkpoint a passing restore drill proved (apps/backups/at_risk.py);
    loaded by the page once it is shown, or a page of its own without JavaScript."""
    return render_page(
        request,
        "backups/workload_at_risk.html",
        {
            "workload": workload,
            "at_risk": at_risk.workload_at_risk(workload, timezone.now()),
            "panel_title": gettext("dollars at risk"),
        },
        partial="panel",
    )
