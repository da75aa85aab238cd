"""The chart builders' layout, read from the figures they return: long names shortened on
the axis with the full name on hover, horizontal bars where names are long, percentage
axes 0–100 and date axes with sensible ticks however little data there is."""

import json
from datetime import UTC, date, datetime, timedelta

import pytest
from django.utils import translation
from django.utils.translation import gettext as _

from apps.core.charts import BASE_LAYOUT, display_width, hover_name, short_label
from apps.procurement import charts as procurement_charts
from apps.procurement.comparison.maths import Demand, OptionSpec, cost_option
from apps.reports import charts as report_charts
from apps.reports.cost.daily import DailySplit
from apps.reports.cost.rows import CostRow
from apps.reports.usage.curves import HourOfDay
from apps.telemetry.charts import build_pool_utilization_figure

LONG_ENGLISH = "Reserved H100 SXM 80GB in Frankfurt, three-year term, paid monthly upfront " * 2
LONG_CHINESE = "北京推理池上海训练集群深圳混合资源池杭州备用节点" * 4
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


@pytest.fixture(autouse=True, params=["en", "zh-hans"])
def language(request):
    with translation.override(request.param):
        yield request.param


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Cloud on-demand", "Cloud on-demand"),
        ("a" * 24, "a" * 24),
        ("a" * 25, "a" * 23 + "…"),
        # Twelve CJK characters take the 24 columns; a thirteenth is cut.
        ("池" * 12, "池" * 12),
        ("池" * 13, "池" * 11 + "…"),
        ("GPU 池" + "池" * 20, "GPU 池" + "池" * 8 + "…"),
    ],
)
def test_a_label_is_cut_to_24_display_columns_cjk_counting_double(name, expected):
    assert short_label(name) == expected
    assert display_width(short_label(name)) <= 24


def test_a_hover_name_is_whole_in_lines_of_about_48_columns():
    english = hover_name(LONG_ENGLISH)
    chinese = hover_name(LONG_CHINESE)
    assert english.replace("<br>", "") == LONG_ENGLISH
    assert chinese.replace("<br>", "") == LONG_CHINESE
    for lines in (english.split("<br>"), chinese.split("<br>")):
        assert len(lines) > 1 and all(display_width(line) <= 48 for line in lines)
    # English breaks after a space, never inside a word.
    assert all(line.endswith(" ") for line in english.split("<br>")[:-1])
    assert hover_name("Cloud on-demand") == "Cloud on-demand"


def test_display_width_counts_cjk_and_fullwidth_characters_double():
    assert display_width("H100") == 4
    assert display_width("北京") == 4
    assert display_width("（A）") == 5


def _results(names, *, tokens: float | None = 1e9):
    demand = Demand(hourly_reference_gpus=(2.0, 4.0, 3.0), horizon_hours=730, output_tokens=tokens)
    return [
        cost_option(demand, OptionSpec(name=name, kind="on_demand", on_demand_price_per_gpu_hour=p))
        for name, p in zip(names, (2.0, 3.5, 5.0), strict=False)
    ]


def _assert_short_ticks_with_full_names(axis, traces, names):
    assert list(axis.tickvals) == names
    assert list(axis.ticktext) == [short_label(name) for name in names]
    assert all(display_width(text) <= 24 for text in axis.ticktext)
    for trace in traces:
        assert [text.replace("<br>", "") for text in trace.customdata] == names
        assert "%{customdata}" in trace.hovertemplate


def test_cost_per_unit_is_horizontal_bars_with_long_names_shortened():
    names = [LONG_ENGLISH, LONG_CHINESE, "On-demand"]
    figure = procurement_charts.build_cost_per_unit_figure(_results(names), "USD")
    per_hour, per_token = figure.data
    assert per_hour.orientation == per_token.orientation == "h"
    assert list(per_hour.y) == names and list(per_token.y) == names
    # Two units in two panels side by side on the same rows, not one shared scale.
    assert per_token.xaxis == "x2"
    assert figure.layout.xaxis.domain[1] < figure.layout.xaxis2.domain[0]
    assert figure.layout.xaxis2.anchor == "y"
    # Each panel's axis says the currency and the legend says per what: two long unit
    # titles would meet at the seam between the panels.
    assert figure.layout.xaxis.title.text == figure.layout.xaxis2.title.text == "USD"
    assert figure.layout.yaxis.autorange == "reversed"
    _assert_short_ticks_with_full_names(figure.layout.yaxis, figure.data, names)
    assert figure.layout.xaxis.automargin and figure.layout.xaxis2.automargin
    # No tick is rotated: plotly only rotates crowded category labels on an x axis.
    assert figure.layout.xaxis.tickangle is None


def test_cost_per_unit_without_tokens_keeps_one_panel():
    figure = procurement_charts.build_cost_per_unit_figure(_results(["A", "B"], tokens=None), "USD")
    assert len(figure.data) == 1 and figure.data[0].orientation == "h"
    assert figure.layout.xaxis.title.text == _("%(currency)s per reference GPU-hour") % {
        "currency": "USD"
    }
    assert figure.layout.xaxis.domain is None and "xaxis2" not in figure.to_plotly_json()["layout"]


def test_two_names_cut_alike_stay_two_bars():
    names = [LONG_ENGLISH + " A", LONG_ENGLISH + " B"]
    figure = procurement_charts.build_cost_by_option_figure(_results(names), "USD", 36)
    axis = figure.layout.yaxis
    assert axis.ticktext[0] == axis.ticktext[1]
    assert len(set(axis.tickvals)) == 2
    _assert_short_ticks_with_full_names(axis, figure.data, names)
    assert all(trace.orientation == "h" for trace in figure.data)


def test_a_long_option_name_is_cut_in_the_hybrid_title():
    demand = Demand(hourly_reference_gpus=(2.0, 4.0, 3.0), horizon_hours=730)
    spec = OptionSpec(
        name=LONG_CHINESE,
        kind="hybrid",
        on_demand_price_per_gpu_hour=4.0,
        baseline_compute_per_gpu_hour=2.0,
    )
    figure = procurement_charts.build_hybrid_curve_figure(cost_option(demand, spec), "USD")
    assert short_label(LONG_CHINESE) in figure.layout.title.text
    assert LONG_CHINESE not in figure.layout.title.text


def test_report_cost_breakdown_shortens_group_names():
    rows = [
        CostRow(
            key="a", label=LONG_CHINESE, purpose="training", cost_usd=100.0, idle_cost_usd=30.0
        ),
        CostRow(key="b", label="chat", purpose="inference", cost_usd=50.0),
    ]
    figure = report_charts.build_cost_breakdown_figure(rows)
    _assert_short_ticks_with_full_names(figure.layout.yaxis, figure.data, [LONG_CHINESE, "chat"])
    assert [list(trace.x) for trace in figure.data] == [[70.0, 50.0], [30.0, 0.0], [0.0, 0.0]]


def _one_hour_rows(pct=100.0):
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    return [
        {"hour": ten, "avg_utilization_pct": pct, "max_utilization_pct": pct,
         "reporting_gpus": 2, "capacity_gpu_hours": 2.0},
    ]  # fmt: skip


def test_a_pool_with_one_hour_draws_0_to_100_percent_with_hourly_ticks():
    figure = build_pool_utilization_figure(_one_hour_rows())
    assert list(figure.layout.yaxis.range) == [0, 100]
    assert figure.layout.yaxis.ticksuffix == " %"
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    # The hour before and after get a tick each, with air beyond them.
    assert list(figure.layout.xaxis.range) == [
        ten - timedelta(minutes=90),
        ten + timedelta(minutes=90),
    ]
    # Serialised as the points' own hours are, so plotly.js reads both alike.
    drawn = json.loads(figure.to_json())
    assert drawn["layout"]["xaxis"]["range"][1] == drawn["data"][0]["x"][0].replace(
        "10:00", "11:30"
    )
    assert figure.layout.xaxis.dtick == HOUR_MS and figure.layout.xaxis.type == "date"
    # A point at 100 % is drawn whole above the last grid line.
    assert all(trace.cliponaxis is False for trace in figure.data)


def test_a_long_utilization_history_keeps_plotly_s_own_ticks():
    start = datetime(2026, 11, 1, tzinfo=UTC)
    rows = [
        {"hour": start + timedelta(hours=hour), "avg_utilization_pct": 40.0} for hour in range(72)
    ]
    axis = build_pool_utilization_figure(rows).layout.xaxis
    assert axis.range is None and axis.dtick is None
    assert build_pool_utilization_figure(rows).layout.yaxis.range == (0, 100)


def _profile(pct):
    return [
        HourOfDay(hour, pct, pct, None, hour in (9, 10)) for hour in range(24)
    ]  # fmt: skip


def test_hour_of_day_utilisation_axis_is_0_to_100_even_when_quiet():
    figure = report_charts.build_hour_of_day_figure(_profile(0.4), zone_name="UTC")
    assert list(figure.layout.yaxis.range) == [0, 100]


def test_a_single_day_split_gets_a_day_either_side_and_daily_ticks():
    day = date(2026, 11, 2)
    split = DailySplit(
        days=[day],
        busy_gpu_hours={"training": [5.0], "inference": [0.0], "mixed": [0.0]},
        measured_cost_usd={"training": [10.0], "inference": [0.0], "mixed": [0.0]},
    )
    axis = report_charts.build_daily_split_figure(split, metric="busy").layout.xaxis
    assert list(axis.range) == [date(2026, 11, 1), date(2026, 11, 3)]
    assert axis.dtick == DAY_MS and axis.tickformat == "%Y-%m-%d"


def test_every_figure_keeps_title_legend_and_axis_titles_apart():
    figures = [
        procurement_charts.build_cost_per_unit_figure(_results(["A", "B"]), "USD"),
        procurement_charts.build_cost_by_option_figure(_results(["A", "B"]), "USD", 36),
        build_pool_utilization_figure(_one_hour_rows(40.0)),
        report_charts.build_hour_of_day_figure(_profile(40.0), zone_name="UTC"),
    ]
    for figure in figures:
        layout = figure.layout
        # The legend is a row above the plot, under the title at the top of the margin.
        assert layout.legend.orientation == "h" and layout.legend.yanchor == "bottom"
        assert layout.legend.y > 1 and layout.title.yanchor == "top"
        assert layout.margin.t >= BASE_LAYOUT["margin"]["t"]
        assert layout.xaxis.automargin and layout.yaxis.automargin
        assert layout.title.text


def test_report_cost_breakdown_draws_the_25_costliest_of_more_rows():
    """30 rows costing 1 … 30 USD: the bars are the 25 costliest, 30 down to 6, and the
    title says how many rows there are."""
    rows = [
        CostRow(key=f"p{cost}", label=f"pool {cost:02d}", purpose="training", cost_usd=cost * 1.0)
        for cost in range(1, 31)
    ]
    with translation.override("en"):
        figure = report_charts.build_cost_breakdown_figure(rows)
        few = report_charts.build_cost_breakdown_figure(rows[:3])
    assert list(figure.data[0].y) == [f"pool {cost:02d}" for cost in range(30, 5, -1)]
    assert list(figure.data[0].x) == [float(cost) for cost in range(30, 5, -1)]
    assert "the 25 costliest of 30" in figure.layout.title.text
    assert list(few.data[0].y) == ["pool 01", "pool 02", "pool 03"]  # as the table lists them
    assert few.layout.title.text == "Cost by group: busy, idle and unmeasured"
