"""Every list and detail page of the demo fleet fits its window, in English on a desktop
and in Chinese on a phone: the page body never scrolls sideways, a table wider than
its card scrolls only inside its .table-responsive wrapper, and a row's Edit / Delete
buttons stay in view without scrolling the table."""

import pytest
from playwright.sync_api import expect

from apps.procurement.demo import SCENARIO_SLUG
from tests.factories import (
    TEST_PASSWORD,
    GpuDeviceFactory,
    HostnameRuleFactory,
    ImportRunFactory,
)

SIZES = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}

# (step name, path); the slugs are the demo fleet's.
PAGES = [
    ("overview", "/"),
    ("pools", "/pools/"),
    ("pool-detail", "/pools/train-h100-sh/"),
    ("workloads", "/workloads/"),
    ("workload-detail", "/workloads/llama3-70b-pretrain/"),
    ("calculator", "/calculator/"),
    ("catalog-gpus", "/catalog/"),
    ("catalog-models", "/catalog/models/"),
    ("telemetry-imports", "/telemetry/imports/"),
    ("telemetry-import", "/telemetry/imports/{import_pk}/"),
    ("telemetry-triage", "/telemetry/gpus/unassigned/"),
    ("telemetry-reconciliation", "/telemetry/reconciliation/"),
    ("telemetry-rules", "/telemetry/rules/"),
    ("backups", "/backups/"),
    ("backup-policy", "/backups/llama3-70b-pretrain/"),
    ("reports-by-pool", "/reports/?group_by=pool"),
    ("reports-by-purpose", "/reports/?group_by=purpose"),
    ("reports-by-workload", "/reports/?group_by=workload"),
    ("procurement", "/procurement/"),
    ("scenario", f"/procurement/{SCENARIO_SLUG}/"),
]

# The admin's Edit / Delete buttons, as each language labels them.
ACTION_LABELS_IN_ORDER = {"en": ("Edit", "Delete"), "zh-hans": ("编辑", "删除")}
ACTION_LABELS = {lang: set(labels) for lang, labels in ACTION_LABELS_IN_ORDER.items()}
POOLS_TITLE = {"en": "GPU pools", "zh-hans": "GPU 资源池"}

# Everything that does not fit, as one list of sentences, so a failure names each table
# and button. A table may be wider than its card only inside a .table-responsive wrapper,
# which must itself fit the card; an action link in a table row must lie inside the
# visible box of its wrapper before anything is scrolled.
MEASURE_OVERFLOW = """() => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > window.innerWidth) {
    problems.push(`page scrolls sideways: ${root.scrollWidth} > ${window.innerWidth}`);
  }
  const describe = (table, index) => table.id ? `#${table.id}` : `table ${index + 1}`;
  document.querySelectorAll("table").forEach((table, index) => {
    if (!table.offsetParent) return;
    const card = table.closest(".card") || document.body;
    const cardBox = card.getBoundingClientRect();
    const wrapper = table.closest(".table-responsive");
    const box = (wrapper || table).getBoundingClientRect();
    if (box.right > cardBox.right + 1 || box.left < cardBox.left - 1) {
      problems.push(`${describe(table, index)} overflows its card: ` +
        `${Math.round(box.left)}–${Math.round(box.right)} outside ` +
        `${Math.round(cardBox.left)}–${Math.round(cardBox.right)}`);
    }
    if (!wrapper && table.scrollWidth > table.clientWidth + 1) {
      problems.push(`${describe(table, index)} is cut without a .table-responsive wrapper`);
    }
    const visible = wrapper ? wrapper.getBoundingClientRect() : cardBox;
    table.querySelectorAll("tbody a.btn, tbody button.btn").forEach((button) => {
      if (!button.offsetParent) return;
      const own = button.getBoundingClientRect();
      if (own.right > visible.right + 1 || own.left < visible.left - 1) {
        problems.push(`${describe(table, index)}: "${button.textContent.trim()}" is out of ` +
          `view at ${Math.round(own.left)}–${Math.round(own.right)}`);
      }
    });
  });
  return problems;
}"""

ACTION_TEXTS = """() => Array.from(document.querySelectorAll("tbody td.table-actions .btn"))
  .filter((button) => button.offsetParent).map((button) => button.textContent.trim())"""


@pytest.fixture
def demo_fleet(transactional_db, demo):
    """The demo fleet, committed for the live server, with what the demo leaves empty
    and triage lists: a rejected upload with long lines, an unassigned GPU on a long
    hostname and a hostname rule, so their tables are measured with rows in them."""
    from apps.pools.models import Pool
    from apps.telemetry.models import GpuDevice, ImportRun

    pool = Pool.objects.get(slug="train-h100-sh")
    HostnameRuleFactory(pool=pool, hostname_pattern="sh-h100-rack-07-node-*.gpu.internal")
    GpuDeviceFactory(
        pool=None,
        assignment=GpuDevice.Assignment.UNASSIGNED,
        uuid="GPU-5c1e9a7b-3f2d-4e8a-9b61-0d7f2a9c4e11",
        key="GPU-5c1e9a7b-3f2d-4e8a-9b61-0d7f2a9c4e11",
        hostname="unlabelled-h100-node-42.rack-07.shanghai.gpu.internal",
        model_name="NVIDIA H100 80GB HBM3",
    )
    run = ImportRunFactory(
        pool=pool,
        filename="dcgm-exporter-scrape-sh-h100-rack-07-2026-11-30T23-59-59Z.prom",
        status=ImportRun.Status.REJECTED,
        rows_total=3,
        rows_rejected=2,
        errors=[
            {"line": 2, "message": "DCGM_FI_DEV_GPU_UTIL{" + "x" * 160 + "} is not a number"},
            {"line": 3, "message": "unknown metric " + "DCGM_FI_PROF_" * 12},
        ],
    )
    return run


@pytest.mark.browser
# Each language at one size: English on a desktop, Chinese on a phone, where the labels
# wrap most.
@pytest.mark.parametrize(("lang", "size"), [("en", "desktop"), ("zh-hans", "phone")])
def test_every_page_fits_its_window(
    browser, live_server, make_user, demo_fleet, lang, size, screenshot_dir
):
    admin = make_user("admin")
    context = browser.new_context(viewport=SIZES[size])
    context.add_cookies([{"name": "django_language", "value": lang, "url": live_server.url}])
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/login/")
        page.fill("#id_username", admin.username)
        page.fill("#id_password", TEST_PASSWORD)
        page.click("form button[type=submit]")
        expect(page.locator("#current-user")).to_be_attached()
        expect(page.locator("html")).to_have_attribute("lang", lang)

        problems = {}
        actions_seen = set()
        for number, (step, path) in enumerate(PAGES, start=1):
            path = path.format(import_pk=demo_fleet.pk)
            page.goto(f"{live_server.url}{path}")
            expect(page.locator(".page-title").first).to_be_visible()
            if step == "pools":
                expect(page.locator(".page-title").first).to_have_text(POOLS_TITLE[lang])
            # Lazy panels (hx-trigger="load") swap themselves out after the load event;
            # measuring before they arrive would miss the widest tables of a page.
            expect(page.locator("[hx-trigger='load']")).to_have_count(0)
            found = page.evaluate(MEASURE_OVERFLOW)
            if found:
                problems[path] = found
            actions_seen.update(page.evaluate(ACTION_TEXTS))
            if step == "scenario":
                # Four options, each with its Edit and Delete in the sticky actions column
                # (MEASURE_OVERFLOW has checked they lie inside the table's visible box).
                rows = page.locator("#comparison-table tbody tr[data-option]")
                expect(rows).to_have_count(4)
                for row in rows.all():
                    expect(row.locator("td.table-actions .btn")).to_have_text(
                        [ACTION_LABELS_IN_ORDER[lang][0], ACTION_LABELS_IN_ORDER[lang][1]]
                    )
                table_shot = f"journey-wide-tables-{lang}-{size}-{number:02d}-scenario-table.png"
                page.locator("#comparison").locator(".table-responsive").first.screenshot(
                    path=str(screenshot_dir / table_shot)
                )
                if size == "phone":
                    # On a phone the table lies below the what-if form: show it.
                    rows.first.scroll_into_view_if_needed()
            shot = f"journey-wide-tables-{lang}-{size}-{number:02d}-{step}.png"
            page.screenshot(path=str(screenshot_dir / shot))

        assert problems == {}
        # The admin sees row actions somewhere, labelled in the page's language.
        assert actions_seen & ACTION_LABELS[lang]
        assert not actions_seen & ACTION_LABELS["zh-hans" if lang == "en" else "en"]
    finally:
        context.close()
