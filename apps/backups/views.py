from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.scope import scope_of
from apps.backups import at_risk, services
from apps.backups.forms import BackupPolicyForm, BackupVersionForm, RestoreDrillForm
from apps.backups.models import BackupPolicy, BackupVersion, RestoreDrill
from apps.backups.recovery_units import page_units
from apps.backups.tables import PolicyTable
from apps.core.crud import delete_page, form_page
from apps.core.history import history_rows
from apps.core.htmx import render_page
from apps.core.tables import configure_table
from apps.pools.models import Workload
from apps.pools.querysets import workload_scope_filter
from apps.pools.scoped import in_scope_or_404

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


def _workload_named(request, slug):
    return Workload.objects.in_scope(scope_of(request.user)).filter(slug=slug)


def _policy_named(request, slug):
    return _policies(request).filter(workload__slug=slug)


def _version_numbered(request, pk):
    return _versions(request).filter(pk=pk)


def _drill_numbered(request, pk):
    return _drills(request).filter(pk=pk)


def _workload_or_404(request, slug):
    return get_object_or_404(
        Workload.objects.in_scope(scope_of(request.user)).with_pool(), slug=slug
    )


def _policy_or_404(request, slug):
    return get_object_or_404(
        _policies(request).with_status().select_related("workload__pool"), workload__slug=slug
    )


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


@require_GET
def policy_detail(request, slug):
    policy = _policy_or_404(request, slug)
    return render_page(request, "backups/policy_detail.html", _policy_page_context(request, policy))


@in_scope_or_404(_workload_named)
@permission_required("backups.add_backuppolicy", raise_exception=True)
@require_http_methods(["GET", "POST"])
def policy_create(request, slug):
    workload = _workload_or_404(request, slug)
    if BackupPolicy.objects.filter(workload=workload).exists():
        return redirect("backups:policy_edit", slug=slug)
    return form_page(
        request,
        form_class=partial(BackupPolicyForm, workload=workload),
        noun=gettext("Backup policy"),
        template="backups/policy_form.html",
        context={"workload": workload},
    )


@in_scope_or_404(_policy_named)
@permission_required("backups.change_backuppolicy", raise_exception=True)
@require_http_methods(["GET", "POST"])
def policy_edit(request, slug):
    policy = get_object_or_404(
        _policies(request).select_related("workload__pool"), workload__slug=slug
    )
    return form_page(
        request,
        form_class=partial(BackupPolicyForm, workload=policy.workload),
        noun=gettext("Backup policy"),
        template="backups/policy_form.html",
        instance=policy,
        context={"workload": policy.workload},
    )


@in_scope_or_404(_policy_named)
@permission_required("backups.delete_backuppolicy", raise_exception=True)
@require_http_methods(["GET", "POST"])
def policy_delete(request, slug):
    policy = get_object_or_404(_policies(request).select_related("workload"), workload__slug=slug)
    return delete_page(
        request,
        obj=policy,
        noun=gettext("Backup policy"),
        blocking=[],
        blocking_label="",
        list_url="backups:policy_list",
        cancel_url=policy.get_absolute_url(),
        pretitle=gettext("Backups"),
    )


@in_scope_or_404(_policy_named)
@permission_required("backups.add_restoredrill", raise_exception=True)
@require_http_methods(["GET", "POST"])
def drill_create(request, slug):
    """The drill form on the policy page posts here with htmx and gets the compliance
    column back (drill recorded, status and list updated) without a reload, and with a
    recorded drill the history card out of band."""
    policy = _policy_or_404(request, slug)
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
                context = _policy_page_context(request, _policy_or_404(request, slug))
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


@require_GET
def drill_detail(request, pk):
    drill = get_object_or_404(
        _drills(request).select_related("policy__workload", "version", "performed_by"), pk=pk
    )
    return render_page(
        request,
        "backups/drill_detail.html",
        {"drill": drill, "history": history_rows(drill), **page_units(drills=[drill])},
    )


@require_GET
def drill_evidence(request, pk):
    """Evidence is served to signed-in users only (never from a public media URL), and
    as a download so an uploaded HTML file cannot run in the dashboard's origin."""
    drill = get_object_or_404(_drills(request), pk=pk)
    if not drill.evidence:
        raise Http404(gettext("This drill has no evidence attached."))
    try:
        handle = drill.evidence.open("rb")
    except FileNotFoundError as error:
        raise Http404(gettext("The evidence file is missing from storage.")) from error
    filename = drill.evidence.name.rsplit("/", 1)[-1]
    return FileResponse(handle, as_attachment=True, filename=filename)


@in_scope_or_404(_drill_numbered)
@permission_required("backups.delete_restoredrill", raise_exception=True)
@require_http_methods(["GET", "POST"])
def drill_delete(request, pk):
    drill = get_object_or_404(_drills(request).select_related("policy__workload"), pk=pk)
    policy = drill.policy
    return delete_page(
        request,
        obj=drill,
        noun=gettext("Drill"),
        blocking=[],
        blocking_label="",
        list_url=policy.get_absolute_url(),
        cancel_url=drill.get_absolute_url(),
        pretitle=gettext("Backups · %(name)s") % {"name": policy.workload.name},
        # The policy's next drill date and overdue flag follow from its drills.
        delete=lambda: services.delete_drill(drill),
    )


@require_GET
def version_detail(request, pk):
    version = get_object_or_404(
        _versions(request).select_related(
            "workload__pool", "workload__backup_policy", "registered_by"
        ),
        pk=pk,
    )
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


@in_scope_or_404(_workload_named)
@permission_required("backups.add_backupversion", raise_exception=True)
@require_http_methods(["GET", "POST"])
def version_create(request, slug):
    workload = _workload_or_404(request, slug)
    form = BackupVersionForm(request.POST or None, workload=workload)
    if request.method == "POST" and form.is_valid():
        version = form.save(user=request.user)
        messages.success(request, gettext("Version %(name)s registered.") % {"name": version.name})
        return redirect(version)
    return render_page(
        request, "backups/version_form.html", {"form": form, "workload": workload, "object": None}
    )


@in_scope_or_404(_version_numbered)
@permission_required("backups.change_backupversion", raise_exception=True)
@require_http_methods(["GET", "POST"])
def version_edit(request, pk):
    version = get_object_or_404(_versions(request).select_related("workload"), pk=pk)
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


@in_scope_or_404(_version_numbered)
@permission_required("backups.delete_backupversion", raise_exception=True)
@require_http_methods(["GET", "POST"])
def version_delete(request, pk):
    version = get_object_or_404(_versions(request).select_related("workload"), pk=pk)
    return delete_page(
        request,
        obj=version,
        noun=gettext("Version"),
        blocking=list(version.drills.order_by("-finished_at")),
        blocking_label="recorded drills (mark the version purged instead)",
        list_url="backups:policy_list",
        cancel_url=version.get_absolute_url(),
        pretitle=gettext("Backups · %(name)s") % {"name": version.workload.name},
    )


@in_scope_or_404(_version_numbered)
@require_POST
def version_mark_stable(request, pk):
    if not request.user.has_perm("backups.change_backupversion"):
        raise PermissionDenied(gettext("Only Ops mark releases stable."))
    version = get_object_or_404(_versions(request), pk=pk)
    try:
        services.mark_stable(version)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(
            request, gettext("%(name)s is now the stable release.") % {"name": version.name}
        )
    return redirect(version)


@require_GET
def workload_at_risk(request, slug):
    """The workload page's "Dollars at risk" card: what a failure now would cost to redo,
    from the newest checkpoint a passing restore drill proved (apps/backups/at_risk.py);
    loaded by the page once it is shown, or a page of its own without JavaScript."""
    workload = get_object_or_404(
        Workload.objects.in_scope(scope_of(request.user)).select_related("pool"), slug=slug
    )
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
