"""The demand chart draws each hybrid baseline as a dashed line with its own legend entry,
so no label sits on the demand curve."""

import pytest

from apps.procurement import charts
from apps.procurement.comparison.services import build_comparison


@pytest.mark.django_db
def test_each_baseline_is_a_legend_line_across_the_whole_curve_not_a_label_on_it(scenario):
    result = build_comparison(scenario)
    hybrids = [row for row in result.results if row.spec.kind == "hybrid"]
    assert hybrids, "the scenario fixture has a hybrid option"
    figure = charts.build_demand_figure(result.demand, result.info.hourly_times, result.results)
    assert not figure.layout.annotations and not figure.layout.shapes
    baselines = [trace for trace in figure.data if "baseline" in trace.name]
    assert [trace.name for trace in baselines] == [
        f"Hybrid H100: baseline {row.baseline_gpus} GPUs" for row in hybrids
    ]
    demand = figure.data[0]
    for trace, row in zip(baselines, hybrids, strict=True):
        assert list(trace.y) == [row.baseline_gpus, row.baseline_gpus]
        # From the first hour of the curve to its last.
        assert (trace.x[0], trace.x[-1]) == (demand.x[0], demand.x[-1])
        assert trace.line.dash == "dash"
