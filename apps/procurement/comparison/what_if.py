"""The scenario page's "What if…" inputs: applied to the unsaved scenario, carried as JSON."""

from decimal import Decimal

from apps.procurement.models import (
    Scenario,
)

# The inputs the scenario page's "What if…" card changes without saving, and how each
# travels as JSON (on an export record, in the API's query).
WHAT_IF_FIELDS = {
    "horizon_months": int,
    "window_days": int,
    "reference_efficiency": Decimal,
    "entered_gpu_hours_per_month": Decimal,
}


def apply_what_if(scenario: Scenario, values: dict) -> dict:
    """Sets the what-if ``values`` (already validated) on the unsaved scenario; returns
    name → saved value for each one that differs from the scenario as saved."""
    saved = {}
    for name, kind in WHAT_IF_FIELDS.items():
        if name not in values:
            continue
        value = values[name]
        value = None if value is None else kind(str(value) if kind is Decimal else value)
        if value != getattr(scenario, name):
            saved[name] = getattr(scenario, name)
            setattr(scenario, name, value)
    return saved


def json_value(value):
    """Whole numbers as numbers, decimals as exact strings (as the API writes them)."""
    return str(value) if isinstance(value, Decimal) else value


def what_if_json(scenario: Scenario, names) -> dict:
    """The scenario's (what-if) values of ``names`` as JSON."""
    return {name: json_value(getattr(scenario, name)) for name in names}
