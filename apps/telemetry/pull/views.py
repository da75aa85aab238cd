"""The pull side's pages: the pull sources (list, create, edit) and *Connect your fleet*
(try a Prometheus or VictoriaMetrics, review the proposed pools, connect, follow the first
pull). The app's urls.py routes to them beside the import pages of ``apps.telemetry.views``."""

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from apps.accounts.models import Team
from apps.accounts.scope import scope_of
from apps.catalog.models import GpuModel
from apps.core.crud import ObjectViews
from apps.core.htmx import is_partial, render_page
from apps.core.outbox import mark_waiting
from apps.pools.models import Pool, Purpose
from apps.telemetry.forms import (
    ConnectForm,
    ProposedPoolForm,
    PullSourceForm,
)
from apps.telemetry.models import (
    GpuDevice,
    ImportRun,
    PullSource,
)
from apps.telemetry.pull import connect
from apps.telemetry.pull.tasks import connect_first_pull_task
from apps.telemetry.scoped import import_runs_of, pull_sources_in
from apps.telemetry.views import PAGE_SIZE


class PullSourceViews(ObjectViews):
    model = PullSource
    name = "pull_source"

    def objects(self, request):
        return pull_sources_in(scope_of(request.user))

    def form_response(self, request, source, parent):
        form = PullSourceForm(request.POST or None, instance=source, scope=scope_of(request.user))
        if request.method == "POST" and form.is_valid():
            saved = form.save()
            messages.success(
                request,
                gettext("Pull source %(name)s saved; beat pulls it on its next tick.")
                % {"name": saved.name},
            )
            return redirect("telemetry:pull_source_list")
        return render_page(
            request, "telemetry/pull_source_form.html", {"form": form, "source": source}
        )


pull_source_views = PullSourceViews()


def _describe_pull_scopes(sources) -> None:
    """``pull_scope_teams`` on each source that stores only some teams' GPUs: the names of
    those teams (one query for the page), shared pools being always in."""
    scopes = {source.pull_scope_key: source.pull_scope for source in sources}
    team_ids = {team_id for scope in scopes.values() for team_id in scope.team_ids}
    names = dict(Team.objects.filter(pk__in=team_ids).values_list("pk", "name"))
    for source in sources:
        scope = scopes[source.pull_scope_key]
        source.pull_scope_teams = (
            None
            if scope.everything
            else sorted(names[team_id] for team_id in scope.team_ids if team_id in names)
        )


@require_GET
def pull_source_list(request):
    # A fleet scraped node by node has a source per node: 1,250 for 10,000 GPUs.
    sources = pull_sources_in(scope_of(request.user)).select_related("pool").order_by("name")
    page = Paginator(sources, PAGE_SIZE).get_page(request.GET.get("page"))
    _describe_pull_scopes(page.object_list)
    return render_page(
        request,
        "telemetry/pull_source_list.html",
        {"sources": page.object_list, "page": page},
    )


pull_source_create = pull_source_views.create_view()
pull_source_edit = pull_source_views.edit_view()


# Connecting a fleet creates pools, GPUs and a pull source: the technical lead's rights.
CONNECT_PERMISSIONS = ("pools.add_pool", "telemetry.add_pullsource", "telemetry.change_gpudevice")


def _proposal_forms(request, proposals, *, bound: bool):
    """One ProposedPoolForm per proposal, prefixed ``pool-N``; bound to the POST by each
    form's ``key`` (the proposals are worked out again from a fresh probe, so a posted
    form is matched to its proposal by key, not by position). Returns (forms, whether
    every proposal found its posted form)."""
    posted = {}
    if bound:
        for name, value in request.POST.items():
            if name.startswith("pool-") and name.endswith("-key"):
                posted[value] = name.removesuffix("-key")
    forms, all_posted = [], True
    for index, proposal in enumerate(proposals):
        prefix = posted.get(proposal.key)
        if prefix is None:
            all_posted = all_posted and not bound
            forms.append(
                ProposedPoolForm(
                    prefix=f"pool-{index}",
                    proposal=proposal,
                    initial={
                        "key": proposal.key,
                        "include": True,
                        "name": proposal.name,
                        "gpu_model": proposal.gpu_model,
                        "purpose": Purpose.MIXED,
                    },
                )
            )
        else:
            forms.append(ProposedPoolForm(request.POST, prefix=prefix, proposal=proposal))
    return forms, all_posted


def _choices(forms) -> tuple[list, list[str]]:
    """(PoolChoice of each ticked form, errors across forms: two ticked pools named
    alike)."""
    choices, seen, problems = [], set(), []
    for form in forms:
        data = form.cleaned_data
        if not data.get("include"):
            continue
        if data["name"].casefold() in seen:
            form.add_error("name", gettext("Two pools cannot share a name: rename one."))
            problems.append(data["name"])
            continue
        seen.add(data["name"].casefold())
        choices.append(
            connect.PoolChoice(
                proposal=form.proposal,
                name=data["name"],
                gpu_model=data["gpu_model"],
                purpose=data["purpose"],
            )
        )
    return choices, problems


@permission_required(CONNECT_PERMISSIONS, raise_exception=True)
@require_http_methods(["GET", "POST"])
def connect_fleet(request):
    """Connect your fleet: the server's URL and credentials; "Try it" (``action=probe``)
    shows what the server holds and the pools proposed for it, "Connect the fleet"
    (``action=accept``) probes again, creates what was accepted and goes to the first
    pull's page. Both answer htmx with the findings alone, so what was typed (the
    password too) stays in the page and is never drawn back from the server."""
    form = ConnectForm(request.POST or None)
    context = {"form": form, "attempted": request.method == "POST"}
    if request.method == "POST" and form.is_valid():
        try:
            findings = connect.probe(form.cleaned_data["url"], form.credentials)
        except connect.ProbeError as error:
            context["probe_error"] = str(error)
        else:
            known = dict(
                GpuDevice.objects.filter(
                    key__in=[device.key for device in findings.devices]
                ).values_list("key", "pool__name")
            )
            in_pools = [device for device in findings.devices if known.get(device.key)]
            waiting = [device for device in findings.devices if not known.get(device.key)]
            proposals = connect.propose_pools(
                waiting,
                GpuModel.objects.all(),
                taken_names=Pool.objects.values_list("name", flat=True),
            )
            accepting = request.POST.get("action") == "accept"
            pool_forms, all_posted = _proposal_forms(request, proposals, bound=accepting)
            context |= {
                "findings": findings,
                "pool_forms": pool_forms,
                "gpus_in_pools": len({device.uuid for device in in_pools}),
                "existing_source": PullSource.objects.filter(
                    kind=PullSource.Kind.PROMETHEUS, url=findings.base_url
                ).first(),
            }
            if accepting:
                response = _accept(request, form, findings, pool_forms, all_posted, context)
                if response is not None:
                    return response
    return render_page(
        request,
        "telemetry/connect.html",
        context,
        fragments={"connect-findings": "connect-findings"},
    )


def _accept(request, form, findings, pool_forms, all_posted, context):
    """The redirect to the first pull's page once everything accepted is created, else
    None with what to correct in ``context``."""
    if not all_posted:
        context["accept_error"] = gettext(
            "The server now reports GPUs it did not when you tried it: check the pools "
            "proposed for them and connect again."
        )
        return None
    if not all(pool_form.is_valid() for pool_form in pool_forms):
        context["accept_error"] = gettext("Correct the pools marked below, then connect again.")
        return None
    choices, duplicates = _choices(pool_forms)
    if duplicates:
        context["accept_error"] = gettext("Correct the pools marked below, then connect again.")
        return None
    if not findings.devices:
        context["accept_error"] = gettext(
            "The server names no GPU by UUID, which the pull needs to tell GPUs apart: "
            "add the UUID label to dcgm-exporter's series (its default) and try again."
        )
        return None
    if pool_forms and not choices:
        context["accept_error"] = gettext("Tick at least one pool to create.")
        return None
    run = connect.connect_fleet(
        base_url=findings.base_url,
        credentials=form.credentials,
        choices=choices,
        user=request.user,
        scope=scope_of(request.user),
    )
    url = reverse("telemetry:connect_run", kwargs={"pk": run.pk})
    if is_partial(request):
        return HttpResponseClientRedirect(url)
    return redirect(url)


@permission_required(CONNECT_PERMISSIONS, raise_exception=True)
@require_GET
def connect_run(request, pk):
    """The first pull of a connected fleet: its progress until its hours are rolled up,
    then per new pool its first hour's utilisation and idle cost."""
    run = get_object_or_404(
        import_runs_of(request.user).filter(task_arguments__has_key=connect.POOL_IDS_ARGUMENT),
        pk=pk,
    )
    mark_waiting([run], connect_first_pull_task, not_started=ImportRun.Status.PENDING)
    pending = connect.rollups_pending(run)
    done = run.is_finished and not pending
    context = {
        "run": run,
        "done": done,
        "rolling_up": run.is_finished and pending,
        "pools": connect.first_hours(run) if done else [],
        "source": PullSource.objects.filter(pk=run.task_arguments.get("source_id")).first(),
    }
    return render_page(
        request,
        "telemetry/connect_run.html",
        context,
        fragments={"connect-progress": "connect-progress"},
    )
