"""Telemetry pages: upload and follow an import (and try a refused upload again with
another format, without choosing the file again), its history, the unassigned-GPUs
triage with a suggested pool per GPU, the hostname rules that keep that triage
short, and where raw samples are stored (their daily partitions and the purges). The pull
sources and *Connect your fleet* are in ``apps.telemetry.pull.views``."""

from datetime import UTC, timedelta
from pathlib import Path
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count, F, Max, Min, Q
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.utils.text import get_valid_filename
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.scope import scope_of
from apps.core.crud import ObjectViews
from apps.core.htmx import render_page
from apps.core.outbox import enqueue, mark_waiting
from apps.core.tables import configure_table
from apps.pools.models import Pool
from apps.pools.views import pool_views
from apps.telemetry.charts import build_pool_utilization_figure
from apps.telemetry.forms import (
    DETECT,
    DeviceAssignForm,
    GpuImportForm,
    HostnameRuleForm,
    RequestImportForm,
)
from apps.telemetry.ingest import kept_uploads
from apps.telemetry.ingest.checks import hour_of, outside_service_sentences
from apps.telemetry.ingest.formats import COMMAND, FORMAT_LABELS, names_of
from apps.telemetry.models import (
    GpuDevice,
    GpuSample,
    HostnameRule,
    ImportRun,
    PoolHourFlag,
    PurgeRun,
)
from apps.telemetry.rollups import partitions, retention
from apps.telemetry.rollups.hourly import rollup_pool_hours
from apps.telemetry.rollups.reconciliation import flagged_pool_days, pool_coverage, pool_days
from apps.telemetry.scoped import hostname_rules_in, import_runs_of
from apps.telemetry.tables import ImportTable
from apps.telemetry.tasks import import_file_task
from apps.telemetry.triage import suggest_pools

PAGE_SIZE = 25
IMPORT_FORMS = {"gpu": GpuImportForm, "requests": RequestImportForm}


class ImportRunViews(ObjectViews):
    model = ImportRun
    lookup = {"pk": "pk"}
    related = ("created_by", "pool", "workload")

    def objects(self, request):
        return import_runs_of(request.user)


import_run_views = ImportRunViews()


@require_GET
def import_list(request):
    runs = (
        import_runs_of(request.user)
        .select_related("created_by", "pool", "workload")
        .defer("errors")
        .order_by("-created_at", "-pk")
    )
    table = ImportTable(runs)
    page = configure_table(request, table)
    # The records are the ones the table draws: the flag set here shows in their rows.
    mark_waiting(page.object_list, import_file_task, not_started=ImportRun.Status.PENDING)
    return render_page(
        request,
        "telemetry/import_list.html",
        {"table": table, "page": page},
        fragments={"imports": "imports"},
    )


def _upload_path(run: ImportRun, name: str) -> Path:
    safe_name = get_valid_filename(Path(name).name)[-100:] or "upload"
    directory = Path(settings.MEDIA_ROOT) / "imports"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{run.pk}-{safe_name}"


# A refused upload may be tried again with another format or mapping while its file is
# kept: these runs are the ones that refused their file.
RETRYABLE_STATUSES = (ImportRun.Status.REJECTED, ImportRun.Status.FAILED)


def _start_import(request, form) -> ImportRun:
    """Record the run, put the file where the worker can read it (keeping a copy for a
    retry: apps/telemetry/ingest/kept_uploads.py), and enqueue the import once the run is
    committed (the worker must find it). A kept file gone meanwhile raises
    KeptUploadError before anything is saved."""
    upload = form.cleaned_data.get("file")
    kept = kept_uploads.keep(upload, form.content_sha256) if upload else form.kept
    filename = Path(form.filename).name
    with transaction.atomic():
        run = ImportRun.objects.create(
            kind=form.kind,
            format=form.cleaned_data["format"],
            detected_format=form.detected_format,
            source=ImportRun.Source.UPLOAD,
            filename=filename[:255],
            pool=form.cleaned_data.get("pool"),
            workload=form.cleaned_data.get("workload"),
            created_by=request.user,
            skip_bad_rows=form.cleaned_data["skip_bad_rows"],
            status=ImportRun.Status.PENDING,
            content_sha256=form.content_sha256,
            scraped_at=form.cleaned_data.get("scraped_at"),
        )
        path = _upload_path(run, filename)
        kept_uploads.copy_for_run(kept, path)
        # The import works on what the uploader can see now, whenever a worker runs it.
        enqueue(
            import_file_task,
            run.pk,
            str(path),
            form.task_columns(),
            form.cleaned_data["time_zone"],
            scope_of(request.user).cache_key,
        )
    return run


@permission_required("telemetry.add_importrun", raise_exception=True)
@require_http_methods(["GET", "POST"])
def import_create(request):
    kind = request.POST.get("kind") or request.GET.get("kind") or "gpu"
    if kind not in IMPORT_FORMS:
        kind = "gpu"
    retry_of = None
    if request.method == "POST":
        form = IMPORT_FORMS[kind](request.POST, request.FILES, user=request.user)
        if form.is_valid():
            try:
                run = _start_import(request, form)
            except kept_uploads.KeptUploadError as error:
                form.add_error("file", str(error))
            else:
                detected = FORMAT_LABELS.get(run.detected_format)
                messages.info(
                    request,
                    gettext(
                        "%(file)s uploaded (detected: %(format)s); the import runs in the "
                        "background."
                    )
                    % {"file": run.filename, "format": detected}
                    if detected
                    else gettext("%(file)s uploaded; the import runs in the background.")
                    % {"file": run.filename},
                )
                return redirect("telemetry:import_detail", pk=run.pk)
        # Whatever was wrong, the file need not be chosen again.
        form.keep_upload()
    elif request.GET.get("retry"):
        retry_of = _retryable_run(request, request.GET["retry"])
        kind = retry_of.kind
        form = _retry_form(request, retry_of)
    else:
        initial = {}
        if kind == "gpu" and request.GET.get("pool"):
            initial["pool"] = request.GET["pool"]
        if kind == "requests" and request.GET.get("workload"):
            initial["workload"] = request.GET["workload"]
        form = IMPORT_FORMS[kind](initial=initial, user=request.user)
    return render_page(
        request,
        "telemetry/import_form.html",
        {
            "form": form,
            "kind": kind,
            # The command line's --format choices, as the registry offers them to it.
            "command_formats": ",".join(names_of(kind, COMMAND)),
            "kept": form.kept,
            "retry_of": retry_of,
            "kept_hours": round(kept_uploads.kept_for().total_seconds() / 3600),
        },
    )


def _retryable_run(request, pk) -> ImportRun:
    """The refused upload ``pk`` that this user may try again: their own (a superuser
    may retry anyone's); 404 for no such upload, 403 for someone else's."""
    try:
        pk = int(pk)
    except ValueError:
        pk = 0
    run = get_object_or_404(import_runs_of(request.user), pk=pk, source=ImportRun.Source.UPLOAD)
    if run.created_by_id != request.user.pk and not request.user.is_superuser:
        raise PermissionDenied(gettext("Only the person who uploaded a file can try it again."))
    return run


def _retry_form(request, run: ImportRun):
    """The upload form for trying ``run``'s file again, its settings filled in and the
    kept file referred to; without a kept file, the plain form and a message saying why."""
    arguments = run.task_arguments or {}
    columns = arguments.get("columns") or {}
    initial = {
        # A format chosen by hand was the wrong one: detection is the better first guess.
        "format": run.format if run.detected_format else DETECT,
        "columns": ",".join(f"{field}={header}" for field, header in columns.items()),
        "time_zone": arguments.get("tz") or "UTC",
        "skip_bad_rows": run.skip_bad_rows,
        "pool": run.pool_id,
        "workload": run.workload_id,
    }
    if run.scraped_at:
        # As the browser would fill it in: wall-clock time in the form's zone.
        local = run.scraped_at.astimezone(ZoneInfo(initial["time_zone"]))
        initial["scraped_at"] = f"{local:%Y-%m-%dT%H:%M:%S}"
    if run.status not in RETRYABLE_STATUSES:
        messages.warning(
            request,
            gettext(
                "Import #%(run)s was not refused (%(status)s): there is nothing to try again. "
                "Choose a file to import another."
            )
            % {"run": run.pk, "status": run.get_status_display()},
        )
        return IMPORT_FORMS[run.kind](initial=initial, user=request.user)
    kept = kept_uploads.find(run.content_sha256, run.filename)
    if kept is None:
        messages.error(request, kept_uploads.gone_sentence(run.filename))
        return IMPORT_FORMS[run.kind](initial=initial, user=request.user)
    initial["kept_upload"] = kept_uploads.token_for(kept, request.user)
    form = IMPORT_FORMS[run.kind](initial=initial, user=request.user)
    form.kept = kept
    return form


@import_run_views.object_view()
@require_GET
def import_detail(request, run):
    context = {
        "run": run,
        "format_label": FORMAT_LABELS.get(run.format, run.format),
        # Interrupted counts: the reaper's sentence says whether it is retried, and the
        # page stops polling either way.
        "finished": run.is_finished,
        "errors_not_shown": max(run.rows_rejected - len(run.errors), 0),
        "retry_kept": _retry_kept(request, run),
        "same_content_runs": _same_content_runs(request, run),
    }
    # Its task may be in the outbox, not yet on the broker (apps/core/outbox.py).
    mark_waiting([run], import_file_task, not_started=ImportRun.Status.PENDING)
    # The progress card polls itself; anything else gets the page or its content.
    return render_page(
        request,
        "telemetry/import_detail.html",
        context,
        fragments={"import-progress": "import-progress"},
    )


def _retry_kept(request, run: ImportRun):
    """The kept file of a refused upload that this user may try again, else None."""
    user = request.user
    if (
        run.source != ImportRun.Source.UPLOAD
        or run.status not in RETRYABLE_STATUSES
        or not user.has_perm("telemetry.add_importrun")
        or (run.created_by_id != user.pk and not user.is_superuser)
    ):
        return None
    return kept_uploads.find(run.content_sha256, run.filename)


def _same_content_runs(request, run: ImportRun):
    """The other imports of the same content that the reader may see, e.g. the retry of a
    refused upload."""
    if not run.content_sha256:
        return []
    return list(
        import_runs_of(request.user)
        .filter(kind=run.kind, content_sha256=run.content_sha256)
        .exclude(pk=run.pk)
        .only("pk", "status", "format", "detected_format", "created_at")
        .order_by("created_at", "pk")[:10]
    )


def _suggestion_sources(scope):
    """(hostname rules in priority order, pools that may take GPUs) for the triage's
    suggestions: archived pools take nothing new, and only the pools in ``scope`` are
    suggested (the ones the reader may assign to)."""
    rules = [
        rule
        for rule in hostname_rules_in(scope)
        .select_related("pool__gpu_model")
        .order_by("priority", "id")
        if not rule.pool.is_archived
    ]
    pools = list(Pool.objects.in_scope(scope).active().select_related("gpu_model").order_by("name"))
    return rules, pools


# The total memory a GPU reports (nvidia-smi's and dcgm-exporter's used + free, which the
# samples keep): the triage's suggestions hold it against each pool's catalog memory.
REPORTED_MEMORY_MIB = Max(F("samples__memory_used_mib") + F("samples__memory_free_mib"))


def _with_reported_memory(devices: list) -> list:
    """``devices`` with ``reported_memory_mib`` set from their samples (one query)."""
    memory = dict(
        GpuDevice.objects.filter(pk__in=[device.pk for device in devices])
        .annotate(reported_memory_mib=REPORTED_MEMORY_MIB)
        .values_list("pk", "reported_memory_mib")
    )
    for device in devices:
        device.reported_memory_mib = memory.get(device.pk)
    return devices


@require_GET
def device_unassigned(request):
    devices = (
        GpuDevice.objects.filter(pool__isnull=True)
        .annotate(sample_count=Count("samples"), reported_memory_mib=REPORTED_MEMORY_MIB)
        .order_by("hostname", "gpu_index", "key")
    )
    page = Paginator(devices, PAGE_SIZE).get_page(request.GET.get("page"))
    scope = scope_of(request.user)
    rules, pools = _suggestion_sources(scope)
    suggestions = suggest_pools(page.object_list, rules=rules, pools=pools)
    for device in page.object_list:
        device.suggestion = suggestions[device.pk]
    context = {
        "page": page,
        "assign_form": DeviceAssignForm(scope=scope),
        "rule_count": hostname_rules_in(scope).count(),
        "suggested_count": sum(
            1 for suggestion in suggestions.values() if suggestion and suggestion.pool
        ),
    }
    return render_page(request, "telemetry/device_unassigned.html", context)


@permission_required("telemetry.change_gpudevice", raise_exception=True)
@require_POST
def device_assign(request):
    """Assign the ticked GPUs to the chosen pool or (``action=suggested``) each unassigned
    one to the pool suggested for it, worked out here again from the rules and pools."""
    use_suggestions = request.POST.get("action") == "suggested"
    form = DeviceAssignForm(
        request.POST, use_suggestions=use_suggestions, scope=scope_of(request.user)
    )
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, error)
        return redirect("telemetry:device_unassigned")
    devices = list(form.cleaned_data["devices"])
    if use_suggestions:
        groups = _suggested_groups(request, devices)
        if not groups:
            return redirect("telemetry:device_unassigned")
    else:
        manual = GpuDevice.Assignment.MANUAL
        groups = [(form.cleaned_data["pool"], [(device, manual) for device in devices])]
    with transaction.atomic():
        outcomes = [
            (pool, [device for device, _ in group], _assign_devices(pool, group))
            for pool, group in groups
        ]
    for pool, group, span in outcomes:
        _say_assigned(request, pool, group, span)
    return redirect("telemetry:device_unassigned")


def _suggested_groups(request, devices):
    """[(pool, [(device, assignment)])] of the ticked GPUs that are unassigned and have a
    suggested pool, by pool name; says what happens to the others."""
    rules, pools = _suggestion_sources(scope_of(request.user))
    already = [device for device in devices if device.pool_id is not None]
    waiting = _with_reported_memory([device for device in devices if device.pool_id is None])
    suggestions = suggest_pools(waiting, rules=rules, pools=pools)
    groups: dict[int, tuple] = {}
    unsuggested = []
    for device in waiting:
        suggestion = suggestions[device.pk]
        if suggestion is None or suggestion.pool is None:
            unsuggested.append(device)
            continue
        # A rule's suggestion is what the rule would have done on first sight.
        assignment = (
            GpuDevice.Assignment.RULE if suggestion.by_rule else GpuDevice.Assignment.MANUAL
        )
        groups.setdefault(suggestion.pool.pk, (suggestion.pool, []))[1].append((device, assignment))
    if already:
        messages.info(
            request,
            ngettext(
                "%(count)s GPU already in a pool was left there.",
                "%(count)s GPUs already in a pool were left there.",
                len(already),
            )
            % {"count": len(already)},
        )
    if unsuggested:
        names = ", ".join(str(device) for device in unsuggested[:5])
        if len(unsuggested) > 5:
            names = gettext("%(names)s and %(more)s more") % {
                "names": names,
                "more": len(unsuggested) - 5,
            }
        messages.warning(
            request,
            ngettext(
                "%(count)s GPU without a suggested pool stay unassigned (%(names)s): choose a "
                "pool for them and press Assign.",
                "%(count)s GPUs without a suggested pool stay unassigned (%(names)s): choose a "
                "pool for them and press Assign.",
                len(unsuggested),
            )
            % {"count": len(unsuggested), "names": names},
        )
    return sorted(groups.values(), key=lambda group: group[0].name)


def _gpus(count: int) -> str:
    return ngettext("%(count)s GPU", "%(count)s GPUs", count) % {"count": count}


def _assign_devices(pool, devices_and_assignments) -> dict:
    """Put the devices in ``pool``, each recorded with its way of assignment, and
    recompute the hours their samples touch, in the pool and in the pools they leave;
    returns the span of their samples, with the counts of those outside the pool's
    service period (``before``, ``after``)."""
    devices = [device for device, _ in devices_and_assignments]
    device_ids = [device.pk for device in devices]
    # Pools the devices leave lose their samples' hours: recompute those too, naming the
    # devices, since their samples now count for the new pool.
    pool_ids = {pool.pk} | {device.pool_id for device in devices if device.pool_id}
    for assignment in sorted({assignment for _, assignment in devices_and_assignments}):
        GpuDevice.objects.filter(
            pk__in=[device.pk for device, way in devices_and_assignments if way == assignment]
        ).update(pool=pool, assignment=assignment)
    # Samples outside the pool's service period are kept but not charged: say so,
    # counted by the hour as the rollup counts them.
    first_hour, end_hour = pool.service_hours()
    outside_counts = {"before": Count("pk", filter=Q(timestamp__lt=first_hour))}
    if end_hour is not None:
        outside_counts["after"] = Count("pk", filter=Q(timestamp__gte=end_hour))
    span = GpuSample.objects.filter(device_id__in=device_ids).aggregate(
        first=Min("timestamp"), last=Max("timestamp"), samples=Count("*"), **outside_counts
    )
    span.setdefault("after", 0)
    # Triage sizes are small: recompute synchronously so the pool page is right at once.
    if span["samples"]:
        start, end = hour_of(span["first"]), hour_of(span["last"]) + timedelta(hours=1)
        for pool_id in sorted(pool_ids):
            released = [device.pk for device in devices if device.pool_id == pool_id]
            rollup_pool_hours(pool_id, start, end, released_device_ids=released)
    return span


def _say_assigned(request, pool, devices, span) -> None:
    gpus = _gpus(len(devices))
    samples = span["samples"]
    outside = span["before"] + span["after"]
    if outside:
        messages.success(
            request,
            gettext(
                "%(gpus)s assigned to %(pool)s; %(counted)s of their %(samples)s samples count."
            )
            % {
                "gpus": gpus,
                "pool": pool,
                "counted": f"{samples - outside:,}",
                "samples": f"{samples:,}",
            },
        )
        for sentence in outside_service_sentences(pool, before=span["before"], after=span["after"]):
            messages.warning(request, sentence)
    else:
        messages.success(
            request,
            ngettext(
                "%(gpus)s assigned to %(pool)s; their %(samples)s sample now count.",
                "%(gpus)s assigned to %(pool)s; their %(samples)s samples now count.",
                samples,
            )
            % {"gpus": gpus, "pool": pool, "samples": f"{samples:,}"},
        )


class HostnameRuleViews(ObjectViews):
    model = HostnameRule
    name = "rule"
    lookup = {"pk": "pk"}
    related = ("pool",)

    def objects(self, request):
        return hostname_rules_in(scope_of(request.user))

    def delete_response(self, request, rule):
        if request.method == "POST":
            rule.delete()
            messages.success(
                request,
                gettext("Rule %(rule)s deleted; GPUs it placed keep their pool.") % {"rule": rule},
            )
            return redirect("telemetry:rule_list")
        return render_page(request, "telemetry/rule_confirm_delete.html", {"rule": rule})


rule_views = HostnameRuleViews()


@require_GET
def rule_list(request):
    rules = (
        hostname_rules_in(scope_of(request.user)).select_related("pool").order_by("priority", "id")
    )
    return render_page(request, "telemetry/rule_list.html", {"rules": rules})


@permission_required("telemetry.add_hostnamerule", raise_exception=True)
@require_http_methods(["GET", "POST"])
def rule_create(request):
    initial = {"pool": request.GET["pool"]} if request.GET.get("pool") else None
    form = HostnameRuleForm(request.POST or None, initial=initial, scope=scope_of(request.user))
    if request.method == "POST" and form.is_valid():
        rule = form.save()
        messages.success(
            request,
            gettext(
                "Rule %(rule)s created. It places GPUs seen for the first time from now on; "
                "assign the GPUs already waiting on the Unassigned GPUs page."
            )
            % {"rule": rule},
        )
        return redirect("telemetry:rule_list")
    return render_page(request, "telemetry/rule_form.html", {"form": form})


rule_delete = rule_views.delete_view()


@require_GET
def reconciliation(request):
    """Flagged pool-hours per pool and UTC day, filterable by pool and flag kind: of the
    pools in the reader's scope."""
    scope = scope_of(request.user)
    pools = Pool.objects.in_scope(scope).order_by("name")
    pool = pools.filter(slug=request.GET.get("pool") or "").first()
    kind = request.GET.get("kind") or ""
    if kind not in PoolHourFlag.Kind.values:
        kind = ""
    keys = flagged_pool_days(pool=pool, kind=kind, scope=scope)
    page = Paginator(keys, PAGE_SIZE).get_page(request.GET.get("page"))
    query = {name: value for name, value in (("pool", pool and pool.slug), ("kind", kind)) if value}
    return render_page(
        request,
        "telemetry/reconciliation.html",
        {
            "page": page,
            "pool_days": pool_days(list(page.object_list), kind=kind),
            "pools": pools,
            "pool": pool,
            "kind": kind,
            "kinds": PoolHourFlag.Kind.choices,
            "query_without_page": urlencode(query),
        },
    )


# How far back a pool's utilization chart looks.
UTILIZATION_WINDOW = timedelta(days=14)


@pool_views.object_view()
@require_GET
def pool_panel(request, pool):
    """The pool page's utilization panel: its coverage over the last 24 h and its hourly
    utilization over UTILIZATION_WINDOW, loaded by the page once it is shown."""
    hourly_rows = list(
        pool.hourly_usage.filter(hour__gte=timezone.now() - UTILIZATION_WINDOW)
        .order_by("hour")
        .values(
            "hour",
            "avg_utilization_pct",
            "max_utilization_pct",
            "reporting_gpus",
            "capacity_gpu_hours",
        )
    )
    coverage_pct, flagged_hours, in_service_hours = pool_coverage(pool, hourly_rows)
    context = {
        "pool": pool,
        "coverage_pct": coverage_pct,
        "coverage_flagged_hours": flagged_hours,
        "coverage_hours": in_service_hours,
        "utilization_figure": build_pool_utilization_figure(hourly_rows),
        "panel_title": gettext("utilization"),
        "panel_template": "telemetry/_pool_utilization.html",
    }
    return render_page(request, "layouts/pool_panel.html", context, partial="panel")


# Purge runs listed on the storage page.
PURGE_RUNS_SHOWN = 10


@permission_required("telemetry.view_purgerun", raise_exception=True)
@require_GET
def storage(request):
    """Where raw samples are kept: the daily partitions, each with its day,
    estimated rows (pg_class.reltuples, kept by autovacuum's ANALYZE) and size on disk,
    beside the retention window; and the last purges, each in its sentence."""
    now = timezone.now()
    horizon = retention.raw_retention_horizon(now)
    first_day, last_day = retention.partition_window(now)
    today = now.astimezone(UTC).date()
    rows = []
    for partition in partitions.partitions():
        if partition.is_default:
            state = "default"
        elif partitions.day_start(partition.day + timedelta(days=1)) <= horizon:
            state = "expired"
        else:
            state = "ahead" if partition.day > today else "held"
        rows.append({"partition": partition, "state": state})
    return render_page(
        request,
        "telemetry/storage.html",
        {
            "rows": rows,
            "rows_estimate_total": sum(max(row["partition"].rows_estimate, 0) for row in rows),
            "size_bytes_total": sum(row["partition"].size_bytes for row in rows),
            "retention_days": settings.TELEMETRY_RAW_RETENTION_DAYS,
            "days_ahead": settings.TELEMETRY_PARTITION_DAYS_AHEAD,
            "horizon": horizon,
            "first_day": first_day,
            "last_day": last_day,
            "purge_runs": PurgeRun.objects.order_by("-created_at", "-pk")[:PURGE_RUNS_SHOWN],
        },
    )
