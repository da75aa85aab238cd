"""What every plotly figure in gpufleet shares, so charts look alike on every page."""

BASE_LAYOUT = {
    "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "font": {"family": "system-ui, -apple-system, 'Segoe UI', sans-serif", "size": 12},
    "legend": {"orientation": "h", "y": -0.2},
}
