"""How the Overview's fleet figures were computed: its utilisation, GPUs and drills
cards, as steps (``Step``) like the cost report's (apps/reports/cost/explain.py)."""

from apps.core.sentences import gettext as _
from apps.reports.cost.explain import Step
from apps.reports.cost.formatting import count, quantity


def explain_utilization(busy_gpu_hours, capacity_gpu_hours, result, *, period: str) -> list[Step]:
    """``apps.reports.usage.fleet.fleet_utilization_pct``: 100 × Σ busy ÷ Σ capacity of
    the pool-hours with telemetry, every pool."""
    steps = [
        Step(
            _("Busy, %(period)s") % {"period": period},
            _("Σ busy GPU-h of every pool-hour with telemetry"),
            busy_gpu_hours,
            "GPU-h",
        ),
        Step(
            _("Measured capacity, %(period)s") % {"period": period},
            _("Σ GPU-h of every pool-hour with telemetry"),
            capacity_gpu_hours,
            "GPU-h",
        ),
    ]
    label = _("Utilisation, %(period)s") % {"period": period}
    if result is None:
        return [*steps, Step(label, _("undefined: no hour with telemetry"), None, "%")]
    expression = _("100 × %(busy)s busy ÷ %(capacity)s measured GPU-h") % {
        "busy": quantity(busy_gpu_hours),
        "capacity": quantity(capacity_gpu_hours),
    }
    return [*steps, Step(label, expression, result, "%")]


def explain_gpu_total(gpus_by_purpose: list[tuple[str, int]], total: int) -> list[Step]:
    """The GPUs of every pool in service, by purpose."""
    steps = [
        Step(label, _("Σ GPUs of its pools in service"), gpus, "GPUs")
        for label, gpus in gpus_by_purpose
    ]
    terms = " + ".join(count(gpus) for _label, gpus in gpus_by_purpose)
    return [*steps, Step(_("GPUs"), terms, total, "GPUs")]


def explain_drills(summary: dict) -> list[Step]:
    """The Overview's drills card (``backups.services.overdue_and_failing_summary``)."""
    return [
        Step(_("Backup policies"), _("policies kept"), summary["policies"], "policies"),
        Step(
            _("Failing"),
            _("policies whose last restore drill failed"),
            summary["failing"],
            "policies",
        ),
        Step(
            _("Overdue"),
            _("policies whose next restore drill was due before now"),
            summary["overdue"],
            "policies",
        ),
    ]
