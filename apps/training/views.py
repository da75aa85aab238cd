"""The workload page's Goodput panel and the import of training event logs."""

from datetime import UTC, datetime, time

from django.utils.dateparse import parse_date
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods

from apps.core.htmx import render_page
from apps.pools.views import workload_views
from apps.training import goodput, services
from apps.training.forms import TrainingEventImportForm
from apps.training.models import TrainingImportRun

# Why a figure is missing, clamped or partial (apps/training/goodput.py's flags).
FLAG_TEXTS = {
    goodput.NO_REFERENCE_STEP: _(
        "No reference step time: set the workload's ideal step time to count effective time."
    ),
    goodput.NO_CHECKPOINT_LOADED: _(
        "No checkpoint_loaded event: effective time counts from the lowest step loaded."
    ),
    goodput.NO_CHECKPOINT_SAVED: _(
        "No checkpoint saved above step 0: no progress is counted as kept."
    ),
    goodput.GOODPUT_ABOVE_100: _(
        "Effective time exceeded the total time and is shown as 100 %: the reference step "
        "time is too long, or steps jump between loads and saves."
    ),
    goodput.BADPUT_ABOVE_TOTAL: _(
        "The badput categories add up to more than the time left after effective time: "
        "slowdown is shown as 0; check the reference step time."
    ),
}

# Import runs listed under the panel.
IMPORT_RUNS_SHOWN = 5


def _day_start(value: str | None):
    """The UTC midnight of a ``YYYY-MM-DD`` day; None for none, or for one that is not a day
    (the panel then shows every event rather than an error in place of the figures)."""
    try:
        day = parse_date(value or "")
    except ValueError:  # well formed but not a day: 2025-02-30
        day = None
    return None if day is None else datetime.combine(day, time(), tzinfo=UTC)


def _rows(figures):
    """The table's rows: total, effective and each badput category, with their units."""
    labels = {
        "checkpoint_loading": _("Checkpoint loading"),
        "progress_lost": _("Training progress lost"),
        "restart": _("Job restart"),
        "checkpoint_saving": _("Checkpoint saving"),
        "slowdown": _("Training slowdown (remainder)"),
    }
    total = figures.total_seconds

    def row(key, label, seconds):
        return {
            "key": key,
            "label": label,
            "hours": seconds / 3600,
            "gpu_hours": figures.gpu_hours(seconds),
            "usd": figures.usd(seconds),
            "pct": seconds / total * 100 if total else None,
        }

    return [
        row("total", _("Total time"), total),
        row("effective", _("Effective computation"), figures.effective_seconds),
        *(
            row(key, labels[key], seconds)
            for key, seconds in figures.measured.badput_seconds.items()
        ),
    ]


def _panel_context(request, workload, *, form=None, run=None):
    start = _day_start(request.GET.get("start"))
    end = _day_start(request.GET.get("end"))
    measured = services.workload_goodput(workload, start=start, end=end)
    return {
        "workload": workload,
        "measured": measured,
        "rows": _rows(measured.total),
        "flag_texts": [FLAG_TEXTS[flag] for flag in measured.total.measured.flags],
        "start": request.GET.get("start", ""),
        "end": request.GET.get("end", ""),
        "form": form or TrainingEventImportForm(),
        "run": run,
        "runs": TrainingImportRun.objects.filter(workload=workload)[:IMPORT_RUNS_SHOWN],
        "panel_title": gettext("goodput"),
    }


@workload_views.object_view(related=("pool",))
@require_GET
def workload_panel(request, workload):
    """The workload page's Goodput panel: each job's measured goodput and badput, the
    import form and the last imports; loaded by the page once it is shown."""
    return render_page(
        request,
        "training/workload_goodput.html",
        _panel_context(request, workload),
        partial="panel",
    )


@workload_views.object_view(permission="training.add_trainingimportrun", related=("pool",))
@require_http_methods(["GET", "POST"])
def event_import(request, workload):
    """Import an event log for the workload: nothing is stored when a line is wrong, and
    the page lists the lines with what each should hold."""
    form, run, status = TrainingEventImportForm(), None, 200
    if request.method == "POST":
        form = TrainingEventImportForm(request.POST, request.FILES)
        if form.is_valid():
            filename, text = form.cleaned_data["file"]
            run = services.import_events(
                workload=workload,
                text=text,
                format=form.cleaned_data["format"],
                columns=form.cleaned_data["columns"],
                source=TrainingImportRun.Source.UPLOAD,
                filename=filename,
                user=request.user,
            )
            if run.status == TrainingImportRun.Status.SUCCEEDED:
                form = TrainingEventImportForm()
            else:
                status = 422
        else:
            status = 422
    if request.htmx:
        # htmx swaps only a 2xx answer: the panel with its errors replaces the panel.
        status = 200
    return render_page(
        request,
        "training/workload_goodput.html",
        _panel_context(request, workload, form=form, run=run),
        partial="panel",
        status=status,
    )
