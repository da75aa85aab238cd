"""RPO and RTO durations in one unit per page (or per sentence), chosen from the largest.

"20,160 min" beside "14.0 days" makes a reader convert; every RPO on a page is written in
the unit that suits the largest RPO shown there, and likewise every RTO: minutes below
3 h, hours below 72 h, days from there on. The only Django import translates the word
"days" (min and h read the same in both languages).
"""

from collections.abc import Iterable
from dataclasses import dataclass

from django.utils.translation import pgettext

SECONDS_PER_MINUTE = 60
SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 86400


@dataclass(frozen=True)
class DurationUnit:
    symbol: str
    seconds: int


MINUTES = DurationUnit("min", SECONDS_PER_MINUTE)
HOURS = DurationUnit("h", SECONDS_PER_HOUR)
DAYS = DurationUnit("days", SECONDS_PER_DAY)

# Below these the smaller unit still reads at a glance (a 150-minute RTO, a 60-hour RPO).
MINUTES_BELOW_SECONDS = 3 * SECONDS_PER_HOUR
HOURS_BELOW_SECONDS = 72 * SECONDS_PER_HOUR


def unit_for(seconds_values: Iterable[float | None]) -> DurationUnit:
    """The unit for a set of durations, from the largest of them."""
    largest_seconds = max((value for value in seconds_values if value is not None), default=0)
    if largest_seconds < MINUTES_BELOW_SECONDS:
        return MINUTES
    if largest_seconds < HOURS_BELOW_SECONDS:
        return HOURS
    return DAYS


def format_in(seconds: float | None, unit: DurationUnit) -> str:
    """``seconds`` in ``unit``, with the unit: whole numbers as they are ("14 days",
    "1,440 min"), others with one decimal ("2.5 h"), below 1 with two significant digits
    ("0.083 days") so a small value in a large unit does not read as 0."""
    if seconds is None:
        return "—"
    if seconds == unit.seconds and unit is DAYS:
        return pgettext("duration", "1 day")
    return f"{number_in(seconds, unit)} {unit_symbol(unit)}"


def number_in(seconds: float | None, unit: DurationUnit) -> str:
    """``seconds`` in ``unit`` as ``format_in`` writes it, without the unit: for a table
    whose column header carries it."""
    if seconds is None:
        return "—"
    value = seconds / unit.seconds
    if value == int(value):
        return f"{int(value):,}"
    if value >= 1:
        return f"{value:,.1f}"
    if value >= 0.01:
        return f"{value:.2g}"
    return "< 0.01"


def unit_symbol(unit: DurationUnit) -> str:
    if unit is DAYS:
        return pgettext("duration unit", "days")
    return unit.symbol


def format_pair(actual_seconds: float, target_seconds: float) -> tuple[str, str]:
    """An actual duration and its target in the one unit that suits the larger."""
    unit = unit_for([actual_seconds, target_seconds])
    return format_in(actual_seconds, unit), format_in(target_seconds, unit)


def page_units(*, policies=(), drills=()) -> dict[str, DurationUnit]:
    """``rpo_unit`` and ``rto_unit``: one unit for every RPO a page shows and one for every
    RTO, from the largest of the policies' targets and the drills' actuals and targets."""
    drills = list(drills)
    return {
        "rpo_unit": unit_for(
            [policy.rpo_seconds for policy in policies]
            + [seconds for d in drills for seconds in (d.actual_rpo_seconds, d.rpo_target_seconds)]
        ),
        "rto_unit": unit_for(
            [policy.rto_seconds for policy in policies]
            + [seconds for d in drills for seconds in (d.actual_rto_seconds, d.rto_target_seconds)]
        ),
    }
