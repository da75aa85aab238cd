"""The budgets' burn-down chart: per budget, what is spent and the forecast at the
month's end, in USD, against the budget's amount. Nothing is clamped: a budget spent
past its amount draws past its marker."""

import plotly.graph_objects as go
from django.utils.translation import gettext as _

from apps.core.charts import BASE_LAYOUT, short_label

SPENT_COLOUR = "#206bc4"
FORECAST_COLOUR = "rgba(32, 107, 196, 0.30)"
OVER_COLOUR = "#d63939"
BUDGET_COLOUR = "#1d273b"


def build_burndown_figure(burndowns) -> go.Figure | None:
    """Horizontal bars per budget: spent so far, forecast at month end (USD), and a
    marker at the budget's amount."""
    if not burndowns:
        return None
    names = [short_label(item.budget.owner_name) for item in burndowns]
    spent = [item.figures.spent_usd for item in burndowns]
    forecast = [item.figures.forecast_usd or 0.0 for item in burndowns]
    amounts = [item.figures.amount_usd for item in burndowns]
    figure = go.Figure()
    figure.add_trace(
        go.Bar(
            name=_("Forecast at month end"),
            y=names,
            x=forecast,
            orientation="h",
            marker={"color": FORECAST_COLOUR},
            hovertemplate="%{y}: $%{x:,.0f} " + _("forecast") + "<extra></extra>",
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
            hovertemplate="%{y}: $%{x:,.0f} " + _("spent") + "<extra></extra>",
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
            hovertemplate="%{y}: $%{x:,.0f} " + _("budget") + "<extra></extra>",
        )
    )
    figure.update_layout(
        title=_("Budgets this month: spent and forecast (USD)"),
        barmode="overlay",
        xaxis_title=_("USD this month"),
        yaxis={"autorange": "reversed"},
        height=max(220, 90 + 40 * len(burndowns)),
        **BASE_LAYOUT,
    )
    return figure
