"""What every plotly figure in gpufleet shares, so charts look alike on every page."""

import unicodedata
from datetime import timedelta

BASE_LAYOUT = {
    "margin": {"l": 60, "r": 20, "t": 100, "b": 50},
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "font": {"family": "system-ui, -apple-system, 'Segoe UI', sans-serif", "size": 12},
    # Between the title and the plot: below it, the legend ran over the x-axis title
    # whenever date ticks took two lines.
    "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0},
    # The title sits at the top left of the chart, the legend at the bottom of the margin;
    # charts.js grows the margin when a wrapped legend would reach the title. Flat keys:
    # every builder passes its own ``title=``.
    "title_x": 0,
    "title_xanchor": "left",
    "title_xref": "container",
    "title_pad_l": 8,
    # Below the mode bar's row, which covers the top right of the chart on hover.
    "title_y": 1,
    "title_yanchor": "top",
    "title_yref": "container",
    "title_pad_t": 30,
    # Tick labels and axis titles push the plot inwards instead of running into each other.
    "xaxis_automargin": True,
    "yaxis_automargin": True,
}

# Display columns a label may take on an axis: a CJK character takes two.
LABEL_WIDTH = 24
ELLIPSIS = "…"


def display_width(text: str) -> int:
    """Columns ``text`` takes in a monospace rendering (East Asian Width: W and F take two)."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def short_label(name, width: int = LABEL_WIDTH) -> str:
    """``name`` cut to ``width`` display columns, ending in "…" when cut; the full name
    belongs in the hover (customdata)."""
    name = str(name)
    if display_width(name) <= width:
        return name
    kept, used = [], display_width(ELLIPSIS)
    for char in name:
        used += display_width(char)
        if used > width:
            break
        kept.append(char)
    return "".join(kept).rstrip() + ELLIPSIS


def hover_name(name, width: int = 2 * LABEL_WIDTH) -> str:
    """The whole ``name`` for a hover label, broken into lines of about ``width`` display
    columns so a long name stays inside a half-width chart. A line breaks after a space
    (kept, so the text still reads with its spaces) or, in a run without spaces such as
    Chinese, between two characters."""
    lines, line = [], ""
    for char in str(name):
        if display_width(line + char) > width:
            cut = line.rfind(" ") + 1 if " " in line[width // 2 :] else len(line)
            lines.append(line[:cut])
            line = line[cut:]
        line += char
    return "<br>".join([*lines, line])


def category_axis(names, **axis) -> dict:
    """An axis of categories drawn with short tick labels: the full names stay the
    categories (two names cut alike stay two bars), the ticks show them shortened."""
    names = [str(name) for name in names]
    return {
        "automargin": True,
        "tickmode": "array",
        "tickvals": names,
        "ticktext": [short_label(name) for name in names],
        **axis,
    }


class FrozenFigure:
    """A figure already serialised to JSON, for caches: unpickling a ``go.Figure``
    validates every property again, while a string is read as it is. ``{% plotly_chart %}``
    takes either."""

    __slots__ = ("json",)

    def __init__(self, figure_json: str):
        self.json = figure_json

    def __getstate__(self):
        return self.json

    def __setstate__(self, state):
        self.json = state


def figure_has_data(figure) -> bool:
    for trace in figure.data:
        for axis in ("x", "y", "values", "z"):
            values = getattr(trace, axis, None)
            if values is not None and len(values) > 0:
                return True
    return False


def freeze_figure(figure):
    """``figure`` as a FrozenFigure; None, or a figure without data, gives None (the
    chart's empty state)."""
    if figure is None or not figure_has_data(figure):
        return None
    return FrozenFigure(figure.to_json())


_HOUR_MS = 3_600_000
_DAY_MS = 24 * _HOUR_MS


def hour_axis(hours, **axis) -> dict:
    """A date axis for hourly points. Up to half a day of data gets a tick every hour,
    written as time and date, with air either side (an hour and a half for a single point,
    so it shows the hour before and after) instead of plotly's minute ticks across a
    near-empty range."""
    hours = sorted(set(hours))
    layout = {"type": "date", "automargin": True, **axis}
    if not hours or hours[-1] - hours[0] > timedelta(hours=12):
        return layout
    # The air runs past the outer ticks, so the first hour's label clears the y axis's.
    air = timedelta(minutes=90) if len(hours) == 1 else timedelta(minutes=45)
    return {
        **layout,
        "range": [hours[0] - air, hours[-1] + air],
        "dtick": _HOUR_MS,
        "tickformat": "%H:%M\n%Y-%m-%d",
    }


def day_axis(days, **axis) -> dict:
    """A date axis for daily points, its ticks written Y-m-d in every language. Up to two
    weeks get one tick a day (never a "12:00" between two days); a single day gets a day
    of air either side."""
    days = sorted(set(days))
    layout = {"type": "date", "automargin": True, "tickformat": "%Y-%m-%d", **axis}
    if not days or len(days) > 14:
        return layout
    layout["dtick"] = _DAY_MS
    if len(days) == 1:
        one_day = timedelta(days=1)
        layout["range"] = [days[0] - one_day, days[0] + one_day]
    return layout
