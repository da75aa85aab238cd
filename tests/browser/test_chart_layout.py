"""Charts in Chromium, on the scenario page in Chinese and on a pool with a single hour of
telemetry in English: no chart's title, legend, axis titles and tick labels run into
each other, long names are cut on the axis and whole on hover, and the utilisation axis
spans 0–100 %."""

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from apps.core.charts import short_label
from apps.procurement.models import ScenarioOption
from apps.telemetry.models import PoolHourlyUsage
from tests.factories import TEST_PASSWORD
from tests.procurement.conftest import add_measurements, make_scenario

WORDS = {
    "en": {"unit_title": "Cost per unit of work", "utilization_title": "GPU utilization per hour"},
    "zh-hans": {"unit_title": "单位工作量成本", "utilization_title": "每小时 GPU 利用率"},
}
LONG_ENGLISH_OPTION = (
    "Rent H100 SXM 80GB on demand in us-east-1 with premium support and a dedicated tenancy"
)
LONG_CHINESE_OPTION = (
    "北京混合方案：预留八十张 H100 作为基线，高峰时段按需租用云上算力并签订三年合约"
)
LONG_CHINESE_POOL = (
    "北京亦庄数据中心第三机房 H100 推理资源池（在线对话、检索增强与批量离线推理共用）"
)
# What each chart on the scenario page draws: the scenario's costs are compute alone and
# its demand is one curve, so those two charts have no legend.
SCENARIO_CHARTS = {
    "chart-cost-by-option": ("title", "axis-title", "tick"),
    "chart-cost-per-unit": ("title", "legend", "axis-title", "tick"),
    "chart-hybrid-curve": ("title", "legend", "axis-title", "tick"),
    "chart-demand": ("title", "axis-title", "tick"),
}

# Boxes of the chart's furniture; tick labels may touch each other, nothing else may.
OVERLAPS_JS = """
(container) => {
  const boxes = [];
  const pick = (selector, kind) => container.querySelectorAll(selector).forEach((element) => {
    const r = element.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) {
      boxes.push({kind, text: element.textContent.slice(0, 40),
                  left: r.left, top: r.top, right: r.right, bottom: r.bottom});
    }
  });
  pick(".g-gtitle", "title");
  pick(".legend", "legend");
  pick(".xtitle, .x2title", "axis-title");
  pick(".ytitle, .y2title", "axis-title");
  pick(".xtick text, .x2tick text, .ytick text, .y2tick text", "tick");
  const overlaps = [];
  for (let i = 0; i < boxes.length; i += 1) {
    for (let j = i + 1; j < boxes.length; j += 1) {
      const a = boxes[i], b = boxes[j];
      if (a.kind === "tick" && b.kind === "tick") continue;
      const apart = a.right <= b.left + 1 || b.right <= a.left + 1
        || a.bottom <= b.top + 1 || b.bottom <= a.top + 1;
      if (!apart) overlaps.push([a.kind + ": " + a.text, b.kind + ": " + b.text]);
    }
  }
  const frame = container.getBoundingClientRect();
  const outside = boxes.filter((box) => box.left < frame.left - 1 || box.right > frame.right + 1)
    .map((box) => box.kind + ": " + box.text);
  return {kinds: [...new Set(boxes.map((box) => box.kind))], overlaps, outside};
}
"""


def _sign_in(page, live_server, user, language):
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()
    expect(page.locator("html")).to_have_attribute("lang", language)


def _drawn(page, chart_id):
    chart = page.locator(f"#{chart_id}")
    expect(chart).to_have_attribute("data-drawn", "true")
    expect(chart.locator("svg.main-svg").first).to_be_attached()
    return chart


def _assert_nothing_overlaps(chart, expected_kinds=("title", "legend", "axis-title", "tick")):
    found = chart.evaluate(OVERLAPS_JS)
    assert set(expected_kinds) <= set(found["kinds"]), found["kinds"]
    assert found["overlaps"] == [], found["overlaps"]
    assert found["outside"] == [], found["outside"]


@pytest.mark.browser
# Chinese: the longer labels in the wider glyphs.
@pytest.mark.parametrize("language", ["zh-hans"])
def test_scenario_charts_keep_long_names_level_and_apart(
    page, live_server, make_user, pool, workload, transactional_db, language, screenshot_dir
):
    scenario = make_scenario(add_measurements(pool, workload))
    ScenarioOption.objects.filter(scenario=scenario, position=1).update(name=LONG_ENGLISH_OPTION)
    ScenarioOption.objects.filter(scenario=scenario, position=2).update(name=LONG_CHINESE_OPTION)
    shot = f"journey-charts_layout-{language}-{{:02d}}-{{}}.png"
    _sign_in(page, live_server, make_user("procurement"), language)

    page.goto(f"{live_server.url}/procurement/{scenario.slug}/")
    for chart_id in SCENARIO_CHARTS:
        _drawn(page, chart_id)
    page.screenshot(path=str(screenshot_dir / shot.format(1, "scenario")), full_page=True)

    unit = _drawn(page, "chart-cost-per-unit")
    expect(unit.locator(".g-gtitle")).to_have_text(WORDS[language]["unit_title"])
    # Horizontal bars: the option names are the y axis's ticks, level and shortened.
    ticks = unit.locator(".ytick text")
    expect(ticks).to_have_text([short_label(LONG_ENGLISH_OPTION), short_label(LONG_CHINESE_OPTION)])
    assert unit.evaluate(
        "chart => [...chart.querySelectorAll('.ytick text, .xtick text')]"
        ".every(text => !/rotate\\(/.test(text.getAttribute('transform') || ''))"
    ), "a tick label is rotated"
    # Two units, two panels; each bar longer than nothing.
    assert unit.evaluate("chart => chart._fullLayout.xaxis2 !== undefined")
    assert unit.locator(".trace.bars .point").count() == 4
    for chart_id, kinds in SCENARIO_CHARTS.items():
        _assert_nothing_overlaps(page.locator(f"#{chart_id}"), kinds)

    # The hover carries the whole name that the axis cut.
    unit.scroll_into_view_if_needed()
    bar = unit.locator(".trace.bars").first.locator(".point path").nth(1).bounding_box()
    page.mouse.move(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
    expect(unit.locator(".hoverlayer .hovertext")).to_contain_text(LONG_CHINESE_OPTION)
    unit.screenshot(path=str(screenshot_dir / shot.format(2, "cost-per-unit-hover")))

    by_option = _drawn(page, "chart-cost-by-option")
    expect(by_option.locator(".ytick text")).to_have_text(
        [short_label(LONG_ENGLISH_OPTION), short_label(LONG_CHINESE_OPTION)]
    )
    by_option.screenshot(path=str(screenshot_dir / shot.format(3, "cost-by-option")))


@pytest.mark.browser
# English: the hour ticks' words; the pool's name is Chinese either way.
@pytest.mark.parametrize("language", ["en"])
def test_a_pool_with_one_hour_of_telemetry_draws_0_to_100_percent_with_hour_ticks(
    page, live_server, make_user, pool, transactional_db, language, screenshot_dir
):
    pool.name = LONG_CHINESE_POOL
    pool.save(update_fields=["name"])
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
    PoolHourlyUsage.objects.create(
        pool=pool,
        hour=hour,
        reporting_gpus=16,
        capacity_gpu_hours=16,
        busy_gpu_hours=12,
        avg_utilization_pct=75.0,
        max_utilization_pct=100.0,
    )
    shot = f"journey-charts_layout-{language}-{{:02d}}-{{}}.png"
    _sign_in(page, live_server, make_user("lead"), language)

    page.goto(f"{live_server.url}/pools/{pool.slug}/")
    # The reports panel's hour-of-day curve: the same hour, on the same 0–100 % scale.
    hour_of_day = _drawn(page, "chart-pool-hour-of-day")
    assert hour_of_day.evaluate("chart => chart._fullLayout.yaxis.range") == [0, 100]
    _assert_nothing_overlaps(hour_of_day)
    chart = _drawn(page, "chart-pool-utilization")
    chart.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / shot.format(1, "pool-one-hour")), full_page=True)
    expect(chart.locator(".g-gtitle")).to_have_text(WORDS[language]["utilization_title"])

    layout = chart.evaluate(
        "chart => ({y: chart._fullLayout.yaxis.range, x: chart._fullLayout.xaxis.range,"
        " ticks: [...chart.querySelectorAll('.xtick text')].map(t => t.textContent),"
        " yticks: [...chart.querySelectorAll('.ytick text')].map(t => t.textContent)})"
    )
    assert layout["y"] == [0, 100]
    assert layout["yticks"][-1].replace("\u2009", " ") in ("100 %", "100 %")
    # An hour either side of the single point, one tick an hour: the three hours, by name.
    expected_hours = [(hour + timedelta(hours=offset)).strftime("%H:%M") for offset in (-1, 0, 1)]
    assert [tick[:5] for tick in layout["ticks"]] == expected_hours, layout["ticks"]
    assert hour.strftime("%Y-%m-%d") in "".join(layout["ticks"])
    _assert_nothing_overlaps(chart)
    # The first hour's label clears the "0 %" of the y axis at the corner.
    corner = chart.evaluate(
        "chart => { const x = chart.querySelector('.xtick text').getBoundingClientRect();"
        " const y = [...chart.querySelectorAll('.ytick text')][0].getBoundingClientRect();"
        " return x.left >= y.right || x.top >= y.bottom; }"
    )
    assert corner, "the first hour's tick runs into the y axis's 0 %"
    chart.screenshot(path=str(screenshot_dir / shot.format(2, "pool-utilization")))
