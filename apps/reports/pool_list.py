"""The pool list's usage and cost columns: each pool's last 30 days, as the report shows
them, added to apps/pools' list through its registry (``apps.pools.list_columns``; the
reports app registers them in ``ReportsConfig.ready()``).

The figures are the report's own: ``selectors.pool_list_figures`` runs the cost report by
pool over the window (``report.cost_report``: its sums aggregated in SQL, a fixed handful
of queries whatever the fleet's size, then ``costmodel``'s formulas), cached until the
data changes. They reach the list's SQL as one ``CASE`` per column keyed by the pool's
slug, so the list's single query filters, sorts (pools without a figure last, both ways)
and paginates by them, and no cost formula is written a second time in SQL.
"""

from django.db.models import Case, FloatField, Value, When
from django.utils.translation import gettext_lazy as _

from apps.accounts.scope import EVERYTHING
from apps.core.tables import END_ALIGNED, cells
from apps.pools.list_columns import PoolListColumns
from apps.reports import selectors
from apps.reports.cache import remember_view
from apps.reports.tables import header_with_unit

# (column name, annotation the cell shows and SQL sorts by, figure of pool_list_figures)
ANNOTATIONS = (
    ("utilization_30d", "utilization_30d_pct", "utilization_pct"),
    ("idle_cost_30d", "idle_cost_30d_usd", "idle_cost_usd"),
    ("cost_30d", "cost_30d_usd", "cost_usd"),
)
HEADERS = {
    "utilization_30d": (
        (_("Utilisation"), _("% · 30 d")),
        _(
            "Busy ÷ measured GPU-hours over the last 30 days, the hours with telemetry only. "
            "— : no telemetry in those 30 days."
        ),
    ),
    "idle_cost_30d": (
        (_("Idle cost"), _("USD · 30 d")),
        _(
            "What the capacity that was not busy cost over the last 30 days: measured cost × "
            "(1 − busy ÷ measured GPU-hours). — : no telemetry in those 30 days."
        ),
    ),
    "cost_30d": (
        (_("Cost"), _("USD · 30 d")),
        _(
            "What the pool cost over the last 30 days: every GPU-hour in service, with or "
            "without telemetry. — : not in service in those 30 days."
        ),
    ),
}
NOTE = _(
    "Utilisation, idle cost and cost cover the last 30 days to the end of the current "
    "hour (UTC), computed as the Reports page computes them; hours without telemetry "
    "count in the cost, never as busy or idle. — : no data in those 30 days, listed last "
    "whichever way a column is sorted."
)

cell = cells("reports/_pool_list_cells.html")


def annotate(pools, now, scope=EVERYTHING):
    """``pools`` with the three figures of each pool as SQL values (NULL: none), computed
    over the pools in the viewer's ``scope``."""
    # A warm-up recomputes the figures after the data changes.
    remember_view("pool-list", scope_key=scope.cache_key)
    figures = selectors.pool_list_figures(now, scope)
    annotations = {}
    for _name, annotation, figure in ANNOTATIONS:
        whens = [
            When(slug=slug, then=Value(values[figure]))
            for slug, values in figures.items()
            if values[figure] is not None
        ]
        annotations[annotation] = (
            Case(*whens, default=Value(None), output_field=FloatField())
            if whens
            else Value(None, output_field=FloatField())
        )
    return pools.annotate(**annotations)


def columns():
    made = []
    for name, annotation, _figure in ANNOTATIONS:
        (label, unit), explanation = HEADERS[name]
        # The unit under the label, as on the Reports page, keeps the columns narrow.
        header = header_with_unit(label, unit)
        attrs = {"th": {**END_ALIGNED["th"], "title": explanation}, "td": END_ALIGNED["td"]}
        made.append(
            (name, cell(name, header, annotation, "name", end=True, nulls_last=True, attrs=attrs))
        )
    return made


POOL_LIST_COLUMNS = PoolListColumns(name="reports", columns=columns, annotate=annotate, note=NOTE)
