"""The budgets' burn-down chart: per budget, what is spent and the forecast at the
month's end, in the reporting currency, against the budget's amount converted to it
(none drawn for a budget whose amount has no rate to convert it). Nothing is clamped: a budget spent
past its amount draws past its marker."""

import plotly.graph_objects as go
from django.utils.translation import gettext as _

from apps.core.charts import BASE_LAYOUT, short_label
from apps.currencies.codes import reporting_currency

SPENT_COLOUR = "#206bc4"
FORECAST_COLOUR = "rgba(32, 107, 196, 0.30)"
OVER_COLOUR = "#d63939"
BUDGET_COLOUR = "#1d273b"


def build_burndown_figure(burndowns) -> go.Figure | None:
    """Horizontal bars per budget: spent so far, forecast at month end (in the reporting
    currency), and a marker at the budget's amount."""
    if not burndowns:
        return None
    currency = reporting_currency()
    amount = "%{x:,.0f} " + currency
    names = [short_label(item.budget.owner_name) for item in burndowns]
    spent = [item.figures.spent for item in burndowns]
    forecast = [item.figures.forecast or 0.0 for item in burndowns]
    amounts = [item.figures.amount for item in burndowns]
    figure = go.Figure()
    figure.add_trace(
        go.Bar(
            name=_("Forecast at month end"),
            y=names,
            x=forecast,
            orientation="h",
            marker={"color": FORECAST_COLOUR},
            hovertemplate="%{y}: " + amount + " " + _("forecast") + "<extra></extra>",
        )
    )
    figure.add_trace(
        go.Bar(
            name=_("Spent so far"),
            y=names,
            x=spent,
            orientation="h",
            marker={
                "color": [
                    OVER_COLOUR if item.figures.state == "over" else SPENT_COLOUR
                    for item in burndowns
                ]
            },
            hovertemplate="%{y}: " + amount + " " + _("spent") + "<extra></extra>",
        )
    )
    figure.add_trace(
        go.Scatter(
            name=_("Budget"),
            y=names,
            x=amounts,
            mode="markers",
            marker={
                "symbol": "line-ns-open",
                "size": 24,
                "color": BUDGET_COLOUR,
                "line": {"width": 3},
            },
            hovertemplate="%{y}: " + amount + " " + _("budget") + "<extra></extra>",
        )
    )
    figure.update_layout(
        title=_("Budgets this month: spent and forecast (%(currency)s)") % {"currency": currency},
        barmode="overlay",
        xaxis_title=_("%(currency)s this month") % {"currency": currency},
        yaxis={"autorange": "reversed"},
        height=max(220, 90 + 40 * len(burndowns)),
        **BASE_LAYOUT,
    )
    return figure
