"""Closed months: the cost report of a month finance has closed, served as it was.

Closing a month (apps/showback/periods.py) stores its cost report rows
(``FrozenCostRow``): one row per pool, and each pool's rows grouped by workload, with the
pool's and the workload's team so that any scope's report composes from them (the rows
grouped by purpose are the pools' rows summed). ``cost_report`` below answers like
``report.cost_report`` and:

- serves every closed month that the range covers whole from its frozen rows, and
  computes the open rest live (one live report per open stretch);
- a range that cuts a closed month partway is computed live over that part: the frozen
  figures are whole months', and a part of a month has no frozen figures to read (the
  periods page and the API close and serve whole months);
- adds the **adjustments**: what the live figures of a closed month now say less what it
  froze (late telemetry, a back-dated price, a pool restored, a new attribution), one row
  per row that moved, booked at the first instant of the first open month after it. A
  range that holds that instant shows them (labelled "Adjustment to 2026-10"), and its
  total includes them.
"""

import dataclasses
from datetime import UTC, date, datetime
from decimal import Decimal

from django.utils.translation import gettext

from apps.accounts.scope import EVERYTHING, Scope
from apps.currencies.codes import USD, reporting_currency
from apps.pools.models import Pool, Purpose, Workload
from apps.reports.cost import explain, report
from apps.reports.cost.rates import conversion_for
from apps.reports.cost.rows import OTHER_TEAMS, UNATTRIBUTED, CostRow, total_row
from apps.reports.cost.split import UNALLOCATED, unmapped_jobs_rows
from apps.reports.models import ClosedMonth, FrozenCostRow
from apps.reports.span import Span

# Differences smaller than this are the float sums' own noise, not an adjustment.
NOISE = 1e-6
ADJUSTMENT_PREFIX = "adjustment-"


# --- months -----------------------------------------------------------------------------


def month_start(day: date) -> datetime:
    return datetime(day.year, day.month, 1, tzinfo=UTC)


def next_month_start(start: datetime) -> datetime:
    if start.month == 12:
        return datetime(start.year + 1, 1, 1, tzinfo=UTC)
    return datetime(start.year, start.month + 1, 1, tzinfo=UTC)


def month_bounds(month: date) -> tuple[datetime, datetime]:
    start = month_start(month)
    return start, next_month_start(start)


def closed_months() -> list[ClosedMonth]:
    return list(ClosedMonth.objects.filter(is_closed=True).order_by("month"))


def split_span(start: datetime, end: datetime, closed=None):
    """[(start, end, ClosedMonth or None)]: the closed months [start, end) covers whole,
    and the open stretches between them, in order."""
    closed = closed_months() if closed is None else closed
    pieces = []
    cursor = start
    for month in closed:
        month_begin, month_end = month_bounds(month.month)
        if month_begin < start or month_end > end:
            continue
        if cursor < month_begin:
            pieces.append((cursor, month_begin, None))
        pieces.append((month_begin, month_end, month))
        cursor = month_end
    if cursor < end:
        pieces.append((cursor, end, None))
    return pieces


def first_open_month_after(month: ClosedMonth, closed) -> datetime:
    closed_starts = {month_start(other.month) for other in closed}
    cursor = next_month_start(month_start(month.month))
    while cursor in closed_starts:
        cursor = next_month_start(cursor)
    return cursor


def adjusted_months(start: datetime, end: datetime, closed=None) -> list[ClosedMonth]:
    """The closed months whose adjustments a range shows: those whose first open month
    begins inside [start, end)."""
    closed = closed_months() if closed is None else closed
    return [month for month in closed if start <= first_open_month_after(month, closed) < end]


def month_label(month: ClosedMonth) -> str:
    return f"{month.month:%Y-%m}"


# --- figures as text and back -------------------------------------------------------------


def additive_fields() -> list[str]:
    """The CostRow fields that add up across rows (numbers, not key, label or parts)."""
    return [
        item.name
        for item in dataclasses.fields(CostRow)
        if item.name not in ("members", "parts")
        and isinstance(item.default, int | float | Decimal)
        and not isinstance(item.default, bool)
    ]


def _stored(value):
    # Money and hours as decimal strings (no float artefacts), counts as integers.
    return value if isinstance(value, int) else str(value)


def _read(text, like):
    if isinstance(like, int):
        return int(text)
    if isinstance(like, Decimal):
        return Decimal(text)
    return float(text)


def figures_of(row: CostRow) -> dict:
    return {name: _stored(getattr(row, name)) for name in additive_fields()}


# Of the same rows over successive spans, these are the rows' sizes, not sums.
SIZES = ("pool_count", "gpus")
# What a row is made of (its pools and GPUs, how many of its parts are measured or
# estimated): a frozen row and the live one may be assembled from different pieces, so
# only the figures are compared.
COUNTS = (*SIZES, "measured_parts", "estimated_parts")


def add_figures(target: CostRow, row: CostRow, *, over_time=False) -> None:
    """Add ``row``'s figures to ``target``: another row's, or (``over_time``) the same
    row's over another span, whose pools and GPUs are the same ones."""
    for name in additive_fields():
        if over_time and name in SIZES:
            setattr(target, name, max(getattr(target, name), getattr(row, name)))
        else:
            setattr(target, name, getattr(target, name) + getattr(row, name))
    target.parts.extend(row.parts)
    target.missing_rates |= row.missing_rates
    target.clusters |= row.clusters


def _frozen_sentence(month: ClosedMonth) -> str:
    return gettext("frozen when %(month)s was closed on %(at)s by %(user)s") % {
        "month": month_label(month),
        "at": f"{month.closed_at:%Y-%m-%d %H:%M} UTC",
        "user": month.closed_by_username,
    }


def reporting_units_per_usd(month: ClosedMonth) -> Decimal | None:
    """Units of the reporting currency per US dollar for a closed month, as the cost
    engine converts it (the rate the month froze, else the one recorded since); None
    while the month has none."""
    if reporting_currency() == USD:
        return Decimal(1)
    conversion = conversion_for(Span(*month_bounds(month.month)), {USD})
    return conversion.units_per_usd(reporting_currency(), month.month)


def _rebuilt(
    stored: FrozenCostRow, month: ClosedMonth, cluster_of_pool: dict, units_per_usd
) -> CostRow:
    row = CostRow(key=stored.key, label=stored.label, purpose=stored.purpose)
    if stored.pool_id in cluster_of_pool:
        row.clusters.add(cluster_of_pool[stored.pool_id][0])
    for name, text in stored.figures.items():
        if hasattr(row, name):
            setattr(row, name, _read(text, getattr(row, name)))
    # The frozen dollars in today's reporting currency: within a month converting is one
    # multiplication, so a month frozen before the reporting currency existed, or in
    # another one, reads as it would have frozen in this one.
    if units_per_usd is None:
        row.cost = Decimal(0)
        row.missing_rates.add((reporting_currency(), month.month))
    else:
        row.cost = row.cost_usd * units_per_usd
    values = {name: getattr(row, name) for name in additive_fields()}
    row.parts.append(
        explain.StoredPart(
            gettext("%(row)s in %(month)s") % {"row": stored.label, "month": month_label(month)},
            _frozen_sentence(month),
            values,
        )
    )
    return row


# --- freezing ---------------------------------------------------------------------------


def freeze_cost_rows(month: ClosedMonth) -> Decimal:
    """Store ``month``'s cost report rows as they are; the fleet's cost of the month.

    Two reports, whatever the number of pools: by pool, and by workload. A workload
    belongs to one pool, so each pool's rows by workload are its workloads' rows, its
    Slurm jobs that no rule maps (unattributed) and the rest of the pool (its row less
    those: the unallocated capacity, or the whole of a pool without workloads,
    unattributed), which the split makes add up to the pool's figures."""
    start, end = month_bounds(month.month)
    month.frozen_rows.all().delete()
    pools = {pool.slug: pool for pool in Pool.objects.all()}
    workloads = {workload.slug: workload for workload in Workload.objects.select_related("pool")}
    workload_rows = {row.key: row for row in report.cost_report(start, end, "workload")}
    unmapped_jobs = (
        unmapped_jobs_rows(workload_rows[UNATTRIBUTED]) if UNATTRIBUTED in workload_rows else {}
    )
    rows_of_pool: dict[int, list] = {}
    for slug, row in workload_rows.items():
        if slug in workloads:
            rows_of_pool.setdefault(workloads[slug].pool_id, []).append((workloads[slug], row))
    stored = []
    total = Decimal(0)
    for pool_row in report.cost_report(start, end, "pool"):
        pool = pools[pool_row.key]
        total += Decimal(str(pool_row.cost_usd))
        frozen = {"closed_month": month, "pool_id": pool.id, "pool_slug": pool.slug}
        frozen["pool_team_id"] = pool.team_id
        stored.append(
            FrozenCostRow(
                **frozen,
                group_by="pool",
                key=pool_row.key,
                label=pool_row.label,
                purpose=pool_row.purpose,
                figures=figures_of(pool_row),
            )
        )
        own = rows_of_pool.get(pool.id, [])
        for workload, row in own:
            stored.append(
                FrozenCostRow(
                    **frozen,
                    group_by="workload",
                    workload_team_id=workload.effective_team_id,
                    is_workload=True,
                    key=row.key,
                    label=row.label,
                    purpose=row.purpose,
                    figures=figures_of(row),
                )
            )
        jobs_row = unmapped_jobs.get(pool.name) if own else None
        if jobs_row is not None:
            stored.append(
                FrozenCostRow(
                    **frozen,
                    group_by="workload",
                    is_workload=False,
                    key=UNATTRIBUTED,
                    label=jobs_row.label,
                    purpose=pool_row.purpose,
                    figures=figures_of(jobs_row),
                )
            )
        rest = _rest_of_pool(
            pool_row, [row for _workload, row in own] + ([jobs_row] if jobs_row else [])
        )
        if rest is not None:
            key = UNALLOCATED if own else UNATTRIBUTED
            label = (
                workload_rows[key].label
                if key in workload_rows
                else gettext("Unallocated capacity")
                if own
                else gettext("Unattributed (pools without workloads)")
            )
            stored.append(
                FrozenCostRow(
                    **frozen,
                    group_by="workload",
                    is_workload=False,
                    key=key,
                    label=label,
                    purpose=pool_row.purpose,
                    figures=figures_of(rest),
                )
            )
    FrozenCostRow.objects.bulk_create(stored)
    return total


def _rest_of_pool(pool_row: CostRow, rows: list) -> CostRow | None:
    """The pool's row less its workloads' rows (None: nothing left but the sums' noise)."""
    rest = CostRow(key="", label="", purpose=pool_row.purpose)
    for name in additive_fields():
        setattr(rest, name, getattr(pool_row, name) - sum(getattr(row, name) for row in rows))
    rest.pool_count, rest.gpus = 1, 0 if rows else pool_row.gpus
    # The workloads' rows count their training and inference parts by their kind, the
    # rest of a pool counts by the pool's purpose (as the split's rest row does).
    training = pool_row.purpose == Purpose.TRAINING
    rest.training_busy_gpu_hours = rest.busy_gpu_hours if training else 0.0
    rest.training_cost_usd = rest.cost_usd if training else 0 * rest.cost_usd
    rest.inference_cost_usd = (
        rest.cost_usd if pool_row.purpose == Purpose.INFERENCE else 0 * rest.cost_usd
    )
    rest.training_lost_gpu_hours = rest.lost_gpu_hours if training else 0.0
    rest.measured_effective_gpu_hours = 0.0
    # Busy training hours that no workload's events account for are estimated.
    rest.measured_parts = 0
    rest.estimated_parts = int(rest.training_busy_gpu_hours > NOISE)
    if rows and all(
        abs(getattr(rest, name)) <= NOISE for name in additive_fields() if name not in COUNTS
    ):
        return None
    return rest


# --- serving ----------------------------------------------------------------------------


def frozen_cost_report(
    month: ClosedMonth,
    group_by: str = "pool",
    *,
    purpose: str | None = None,
    pool_slug: str | None = None,
    cluster_slug: str | None = None,
    scope: Scope = EVERYTHING,
) -> list[CostRow]:
    """``month``'s rows as they were frozen, for the scope and filters a live report
    takes (``report.cost_report``'s). A pool's rows count for the cluster the pool is in
    now: a month froze figures, not the fleet's layout."""
    stored = FrozenCostRow.objects.filter(
        closed_month=month,
        group_by="pool" if group_by in ("purpose", "cluster") else group_by,
    )
    if pool_slug:
        stored = stored.filter(pool_slug=pool_slug)
    # Pool id → (cluster slug, cluster name), of the pools that still exist.
    cluster_of_pool = {
        pool_id: (slug, name)
        for pool_id, slug, name in Pool.objects.values_list("pk", "cluster__slug", "cluster__name")
    }
    units_per_usd = reporting_units_per_usd(month)
    if cluster_slug:
        stored = stored.filter(
            pool_id__in=[
                pool_id
                for pool_id, (slug, _name) in cluster_of_pool.items()
                if slug == cluster_slug
            ]
        )
    if purpose:
        # By the pool's purpose, as the live report filters its pools: a workload row's
        # purpose is its pool's, the unattributed rest has none of its own.
        pool_ids = FrozenCostRow.objects.filter(
            closed_month=month, group_by="pool", purpose=purpose
        ).values_list("pool_id", flat=True)
        stored = stored.filter(pool_id__in=list(pool_ids))
    stored = [row for row in stored if scope.covers_team(row.pool_team_id)]
    if group_by == "pool":
        return [_rebuilt(row, month, cluster_of_pool, units_per_usd) for row in stored]
    if group_by == "cluster":
        by_cluster = {}
        for row in stored:
            slug, name = cluster_of_pool.get(row.pool_id, ("", gettext("Deleted pools")))
            if slug not in by_cluster:
                by_cluster[slug] = CostRow(key=slug, label=name)
            add_figures(by_cluster[slug], _rebuilt(row, month, cluster_of_pool, units_per_usd))
        return sorted(by_cluster.values(), key=lambda row: row.label)
    if group_by == "purpose":
        rows = {
            value: CostRow(key=value, label=str(label), purpose=value)
            for value, label in Purpose.choices
            if not purpose or value == purpose
        }
        for row in stored:
            if row.purpose in rows:
                add_figures(rows[row.purpose], _rebuilt(row, month, cluster_of_pool, units_per_usd))
        return list(rows.values())
    # By workload: the visible workloads' rows, the others' summed into one row that names
    # none of them, and the rows that are no workload's (the unattributed rest) merged.
    rows = {}
    rest = {}
    others = []
    for row in stored:
        rebuilt = _rebuilt(row, month, cluster_of_pool, units_per_usd)
        if row.is_workload and not scope.covers_team(row.workload_team_id):
            rebuilt.parts = []
            others.append(rebuilt)
            continue
        target = rows if row.is_workload else rest
        if row.key in target:
            add_figures(target[row.key], rebuilt)
        else:
            target[row.key] = rebuilt
    result = list(rows.values())
    if others:
        other_label = gettext("Other teams' workloads")
        result.append(total_row(others, key=OTHER_TEAMS, label=other_label))
    return result + list(rest.values())


def _merged(pieces: list[list[CostRow]]) -> list[CostRow]:
    rows = {}
    for piece in pieces:
        for row in piece:
            if row.key in rows:
                add_figures(rows[row.key], row, over_time=True)
            else:
                rows[row.key] = row
    return list(rows.values())


def adjustment_rows(month: ClosedMonth, group_by: str, **filters) -> list[CostRow]:
    """What ``month``'s figures now say less what it froze, one row per row that moved,
    labelled "Adjustment to 2026-10 · <row>"."""
    start, end = month_bounds(month.month)
    live = {row.key: row for row in report.cost_report(start, end, group_by, **filters)}
    frozen = {row.key: row for row in frozen_cost_report(month, group_by, **filters)}
    names = additive_fields()
    rows = []
    for key in list(live) + [key for key in frozen if key not in live]:
        now_row, then_row = live.get(key), frozen.get(key)
        base = now_row or then_row
        label = gettext("Adjustment to %(month)s · %(row)s") % {
            "month": month_label(month),
            "row": base.label,
        }
        row = CostRow(
            key=f"{ADJUSTMENT_PREFIX}{month_label(month)}-{key}", label=label, purpose=base.purpose
        )
        row.clusters = set(base.clusters)
        for name in names:
            if name in COUNTS:
                continue  # what a row is made of, not a figure that moves: stays 0
            value = (getattr(now_row, name) if now_row else 0) - (
                getattr(then_row, name) if then_row else 0
            )
            setattr(row, name, value)
        if all(abs(getattr(row, name)) < NOISE for name in names):
            continue
        row.parts.append(
            explain.StoredPart(
                label,
                gettext("%(month)s's figure computed today − its figure frozen on %(at)s")
                % {"month": month_label(month), "at": f"{month.closed_at:%Y-%m-%d}"},
                {name: getattr(row, name) for name in names},
            )
        )
        rows.append(row)
    return rows


def is_adjustment(row) -> bool:
    return row.key.startswith(ADJUSTMENT_PREFIX)


def cost_report(
    start: datetime,
    end: datetime,
    group_by: str = "pool",
    *,
    purpose: str | None = None,
    pool_slug: str | None = None,
    cluster_slug: str | None = None,
    scope: Scope = EVERYTHING,
) -> list[CostRow]:
    """``report.cost_report``'s rows, with the closed months the range covers whole as
    they were frozen and the adjustments booked in the range (module docstring)."""
    filters = {
        "purpose": purpose,
        "pool_slug": pool_slug,
        "cluster_slug": cluster_slug,
        "scope": scope,
    }
    closed = closed_months()
    if not closed:
        return report.cost_report(start, end, group_by, **filters)
    pieces = [
        frozen_cost_report(month, group_by, **filters)
        if month is not None
        else report.cost_report(piece_start, piece_end, group_by, **filters)
        for piece_start, piece_end, month in split_span(start, end, closed)
    ]
    rows = _merged(pieces)
    for month in adjusted_months(start, end, closed):
        rows.extend(adjustment_rows(month, group_by, **filters))
    return rows


def range_notes(start: datetime, end: datetime) -> list[str]:
    """Sentences on how a range's figures read its closed months: served as frozen, cut
    partway (computed live), or corrected by an adjustment booked in the range."""
    closed = closed_months()
    notes = []
    for month in closed:
        month_begin, month_end = month_bounds(month.month)
        values = {
            "month": month_label(month),
            "at": f"{month.closed_at:%Y-%m-%d %H:%M}",
            "user": month.closed_by_username,
        }
        if start <= month_begin and month_end <= end:
            notes.append(
                gettext(
                    "%(month)s is closed: its figures are as they were frozen on %(at)s UTC "
                    "by %(user)s."
                )
                % values
            )
        elif month_begin < end and start < month_end:
            notes.append(
                gettext(
                    "This range covers part of %(month)s, which is closed: that part is "
                    "computed from the data as it is today. Choose the whole month to read "
                    "it as it was frozen."
                )
                % values
            )
    for month in adjusted_months(start, end, closed):
        notes.append(
            gettext(
                "Includes the adjustments to %(month)s: what its figures moved by since it closed."
            )
            % {"month": month_label(month)}
        )
    return notes
