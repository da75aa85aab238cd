"""What every plotly figure in gpufleet shares, so charts look alike on every page."""

BASE_LAYOUT = {
    "margin": {"l": 60, "r": 20, "t": 90, "b": 50},
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "font": {"family": "system-ui, -apple-system, 'Segoe UI', sans-serif", "size": 12},
    # Between the title and the plot: below it, the legend ran over the x-axis title
    # whenever date ticks took two lines.
    "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0},
}


class FrozenFigure:
    """A figure already serialised to JSON, for caches: unpickling a ``go.Figure``
    validates every property again (~50 ms a figure, measured by bench/dashboard.py's
    profile), while a string costs nothing. ``{% plotly_chart %}`` takes either."""

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
