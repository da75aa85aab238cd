"""``{% plotly_chart figure title=... %}``: a figure as inert JSON plus its container.

The JSON sits in ``<script type="application/json">`` (never executed, so the CSP needs
no 'unsafe-inline'); static/js/charts.js draws every container on load and htmx:load.
A figure without data renders the shared empty state instead of a blank plot.
"""

from django import template
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

from apps.core.charts import FrozenFigure, figure_has_data

register = template.Library()

# The same escapes as django.utils.html.json_script, so "</script>" in a label is inert.
_JSON_SCRIPT_ESCAPES = {ord(">"): "\\u003E", ord("<"): "\\u003C", ord("&"): "\\u0026"}


# Shown where a page names no empty state of its own.
NO_DATA_MESSAGE = _("No data to chart yet.")


@register.simple_tag
def plotly_chart(figure, chart_id, empty_message=NO_DATA_MESSAGE, height_px=320):
    if isinstance(figure, FrozenFigure):
        figure_json = figure.json.translate(_JSON_SCRIPT_ESCAPES)
    elif figure is None or not figure_has_data(figure):
        return render_to_string("components/_empty.html", {"message": empty_message})
    else:
        figure_json = figure.to_json().translate(_JSON_SCRIPT_ESCAPES)
    html = render_to_string(
        "components/_chart.html",
        {"chart_id": chart_id, "height_px": height_px, "figure_json": mark_safe(figure_json)},  # noqa: S308 - escaped above
    )
    return mark_safe(html)  # noqa: S308 - rendered from our template
