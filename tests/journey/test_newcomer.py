"""A newcomer's first hour, end to end: gpufleet started exactly as ``make run`` starts it
(embedded PostgreSQL and Redis, gunicorn, a Celery worker and beat, the demo), then driven
in Chromium as each demo user, and stopped with Ctrl-C.

- The administrator, the technical lead and the serving team's lead open every page of
  the navigation and of the user menu (read from the page, so a new page is walked without
  an edit here), lazy panels loaded: the administrator every pool page too, the technical
  lead after the imports with the pool they went into, the serving lead through a team's
  scope. The other demo users sign in and land on the Overview: their pages are the same
  templates with fewer buttons, and what each role gets from every page and fragment is
  tests/test_urls_roles.py's walk (tests/browser/test_shell.py walks the read-only role's
  navigation in Chromium).
- The technical lead uploads a real dcgm-exporter scrape and a real nvidia-smi CSV into a
  pool, and a scrape without one; the worker imports them; the triage page assigns the
  waiting GPU to its suggested pool, whose hourly utilisation then shows that GPU's.
- The administrator adds a webhook channel pointing at a local receiver and a rule the
  demo breaches; beat evaluates it and the worker posts Alertmanager's JSON, with no
  command typed.
- A second stack without the demo, a superuser of one's own, and the empty Overview's
  *Connect your fleet* pointed at a real Prometheus that scrapes real dcgm-exporter text:
  the proposed pools are accepted and the Overview shows the fleet's utilisation.
- Throughout: no answer of 500 or more, no console error, no request leaving the machine.
"""

import re
import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.alerts.peers import start_http_receiver
from tests.journey.stack import (
    DEMO_PASSWORD,
    DEMO_USERS,
    newcomer_var_dir,
    serve_dcgm_scrapes,
    start_prometheus_scraping,
    start_stack,
)
from tests.telemetry.test_pull import SCRAPES, expected_gpus
from tests.waiting import wait_until

DATA = Path(__file__).resolve().parent.parent / "data"
L40S_SCRAPE = DATA / "dcgm-exporter" / "scrapes" / "upcloud_L40S_driver595.prom"
L40S_NVIDIA_SMI = (
    DATA / "nvidia-smi" / "query_gpu_csv" / "linux-x86_64__nvidia-l40s__595.80__load.csv"
)
T4_SCRAPE = DATA / "dcgm-exporter" / "scrapes" / "ericsson_T4_loaded_driver590_nohelp.prom"
# The demo's pools these files belong to (apps/demo/management/commands/seed_demo.py).
L40S_POOL = ("infer-l40s-hk", "Inference · L40S · Hong Kong", "Serving")
T4_POOL = ("edge-t4", "Edge · T4 · stores")
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
WEBHOOK_PATH = "/alertmanager"
NOTIFICATION_TIMEOUT_SECONDS = 120
# Lazy panels and the reports page's poll load themselves from an element with this trigger.
LOADING = '[hx-trigger^="load"]'
SETTLE_TIMEOUT_SECONDS = 60


@dataclass
class Problems:
    """What the browser saw go wrong, each with the user and the page it happened on."""

    server_errors: list = field(default_factory=list)
    console_errors: list = field(default_factory=list)
    foreign_requests: list = field(default_factory=list)

    def watch(self, page, user: str) -> None:
        page.on(
            "response",
            lambda response: (
                response.status >= 500
                and self.server_errors.append((user, response.status, response.url))
            ),
        )
        page.on(
            "console",
            lambda message: (
                message.type == "error"
                and self.console_errors.append((user, page.url, message.text))
            ),
        )
        page.on("pageerror", lambda error: self.console_errors.append((user, page.url, str(error))))
        page.on("request", lambda request: self._check_host(user, request.url))

    def _check_host(self, user: str, url: str) -> None:
        host = urlsplit(url).hostname
        if host is not None and host not in LOCAL_HOSTS:
            self.foreign_requests.append((user, url))

    def assert_none(self) -> None:
        assert not self.server_errors, f"answers of 500 or more: {self.server_errors}"
        assert not self.console_errors, f"console errors: {self.console_errors}"
        assert not self.foreign_requests, f"requests off the machine: {self.foreign_requests}"


@dataclass
class Session:
    """One demo user signed in, in a browser context of their own."""

    context: object
    page: object
    stack: object
    problems: Problems

    @classmethod
    def sign_in(cls, browser, stack, user: str, problems: Problems) -> "Session":
        context = browser.new_context(locale="en-GB", timezone_id="UTC")
        page = context.new_page()
        problems.watch(page, user)
        page.goto(f"{stack.url}/login/")
        page.fill("#id_username", user)
        page.fill("#id_password", DEMO_PASSWORD)
        page.click("form button[type=submit]")
        expect(page.locator("#current-user")).to_be_visible()
        return cls(context, page, stack, problems)

    def settle(self) -> None:
        """Wait until what the page loads after it is in: the lazy panels and the reports
        page's poll replace their placeholders, and no htmx request is in flight. The
        pages load nothing else (no fetch, no timer in static/js), so this is the moment
        networkidle guesses at, without its half second of silence per page. A panel
        answered with an error keeps its placeholder: that fails at once."""
        waiting = self.page.locator(f"{LOADING}, .htmx-request")
        errors_before = len(self.problems.server_errors)
        deadline = time.monotonic() + SETTLE_TIMEOUT_SECONDS
        while waiting.count():
            if len(self.problems.server_errors) > errors_before:
                raise AssertionError(f"{self.page.url}: {self.problems.server_errors[-1]}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.page.url}: still loading after {SETTLE_TIMEOUT_SECONDS} s: "
                    + waiting.first.evaluate("element => element.outerHTML.slice(0, 300)")
                )
            self.page.wait_for_timeout(50)

    def visit(self, path_or_url: str) -> None:
        url = path_or_url if "://" in path_or_url else f"{self.stack.url}{path_or_url}"
        response = self.page.goto(url)
        assert response is not None and response.ok, f"{url}: {response and response.status}"
        self.settle()

    def walk_every_page(self, *, every_pool: bool = True) -> None:
        """Every page the navigation and the user menu offer, and every pool the pool
        list links (or its first only: which pools a role may open, and what they answer,
        is tests/test_team_scope.py's and tests/test_urls_roles.py's walk; here a role's
        own pages are drawn in a browser)."""
        navigation = self.page.eval_on_selector_all(
            "#main-nav a.nav-link", "links => links.map(a => a.href)"
        )
        assert len(navigation) >= 10, navigation
        navigation += self.page.eval_on_selector_all(
            "header .dropdown-menu a.dropdown-item[href]", "links => links.map(a => a.href)"
        )
        pools = []
        for url in navigation:
            self.visit(url)
            if urlsplit(url).path == "/pools/":
                pools = self.page.eval_on_selector_all(
                    "#pool-table a[href]", "links => links.map(a => a.getAttribute('href'))"
                )
        pools = sorted({href for href in pools if re.fullmatch(r"/pools/[\w-]+/", href)})
        assert pools, "the pool list links no pool"
        if not every_pool:
            pools = pools[:1]
        for path in pools:
            self.visit(path)

    def hourly_utilisation(self, pool_slug: str) -> dict[datetime, float | None]:
        """The pool page's utilisation chart as drawn: UTC hour → average of reporting
        GPUs."""
        self.visit(f"/pools/{pool_slug}/")
        chart = self.page.locator("#chart-pool-utilization")
        expect(chart.locator(".main-svg").first).to_be_attached()
        trace = chart.evaluate("element => ({x: element.data[0].x, y: element.data[0].y})")
        return {
            datetime.fromisoformat(hour).replace(tzinfo=UTC): value
            for hour, value in zip(trace["x"], trace["y"], strict=True)
            if hour is not None
        }

    def upload(self, path: Path, *, pool_name: str | None) -> str:
        """Upload ``path`` on the import page (format detected), into ``pool_name`` or
        none; returns the import's page."""
        self.visit("/telemetry/imports/new/")
        self.page.set_input_files("#id_file", str(path))
        if pool_name:
            self.page.select_option("#id_pool", label=pool_name)
        self.page.locator("#import-form button[type=submit]").click()
        expect(self.page).to_have_url(re.compile(r"/telemetry/imports/\d+/$"))
        return self.page.url


def fresh_copy(path: Path, directory: Path) -> Path:
    """The scrape as just saved from /metrics: its modification time, which the upload page
    takes as the scrape time, is now."""
    copy = directory / path.name
    shutil.copyfile(path, copy)
    return copy


@pytest.fixture
def var_dir():
    with newcomer_var_dir("newcomer") as directory:
        yield directory


@pytest.mark.browser
@pytest.mark.worker
@pytest.mark.stack
def test_a_newcomer_runs_the_demo_signs_in_as_everyone_imports_and_is_alerted(
    browser, var_dir, tmp_path, screenshot_dir
):
    started = time.monotonic()
    # Seconds from the start at the end of each part, printed at the end (pytest -s).
    seconds_at = {}
    receiver, receiver_server = start_http_receiver()
    stack = start_stack(var_dir, "newcomer-stack.log")
    problems = Problems()
    try:
        ready_log = stack.ready_log
        for user in DEMO_USERS:
            assert re.search(rf"^\s+{re.escape(user)}\s", ready_log, re.MULTILINE), user
        status, body = stack.get("/healthz")
        assert status == 200, body

        # The administrator sets up alerting first: beat evaluates it while the others walk.
        admin = Session.sign_in(browser, stack, "admin", problems)
        admin.visit("/alerts/channels/new/")
        admin.page.fill("#id_name", "Journey receiver")
        admin.page.select_option("#id_kind", "webhook")
        admin.page.fill("#id_url", receiver.url(WEBHOOK_PATH))
        admin.page.get_by_role("button", name="Save channel").click()
        expect(admin.page).to_have_url(f"{stack.url}/alerts/channels/journey-receiver/")
        admin.visit("/alerts/rules/new/")
        admin.page.fill("#id_name", "Journey L40S under 100 %")
        admin.page.select_option("#id_kind", "low_utilisation")
        admin.page.select_option("#id_channel", label="Journey receiver")
        # Below 100 % over a day: the demo's inference pools peak under 90 %.
        admin.page.fill("#id_threshold_pct", "100")
        admin.page.fill("#id_window_hours", "24")
        admin.page.select_option("#id_pool", label=L40S_POOL[1])
        # A pool's rule belongs to the pool's team, as the form says when it is left out.
        admin.page.select_option("#id_team", label=L40S_POOL[2])
        admin.page.get_by_role("button", name="Save rule").click()
        expect(admin.page).to_have_url(f"{stack.url}/alerts/rules/journey-l40s-under-100/")
        rule_saved_at = time.monotonic()
        admin.walk_every_page()
        seconds_at["admin"] = time.monotonic() - started

        # The technical lead imports, then assigns the GPU that waits for a pool.
        lead = Session.sign_in(browser, stack, "lead", problems)
        before = lead.hourly_utilisation(T4_POOL[0])
        imports = [
            lead.upload(fresh_copy(L40S_SCRAPE, tmp_path), pool_name=L40S_POOL[1]),
            lead.upload(L40S_NVIDIA_SMI, pool_name=L40S_POOL[1]),
            lead.upload(fresh_copy(T4_SCRAPE, tmp_path), pool_name=None),
        ]
        # Every page after the imports, and the pool they went into (the administrator
        # opened every pool before them).
        lead.walk_every_page(every_pool=False)
        lead.visit(f"/pools/{L40S_POOL[0]}/")
        for url, expected_format, accepted in [
            (imports[0], "dcgm-exporter scrape", len(expected_gpus(L40S_SCRAPE))),
            (imports[1], "nvidia-smi CSV", 1),
            (imports[2], "dcgm-exporter scrape", len(expected_gpus(T4_SCRAPE))),
        ]:
            lead.visit(url)
            expect(lead.page.locator("#import-format")).to_have_text(f"Detected: {expected_format}")
            # The worker has it: the progress card polls itself until it is finished.
            expect(lead.page.locator("#rows-accepted")).to_have_text(str(accepted), timeout=60_000)
            expect(lead.page.locator("#rows-rejected")).to_have_text("0")
        lead.page.screenshot(path=screenshot_dir / "newcomer-import.png", full_page=True)
        scrape_time = lead.page.locator("#import-details dd span[title]").first
        scraped_at = datetime.fromisoformat(scrape_time.get_attribute("title"))
        scrape_hour = scraped_at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)

        lead.visit("/telemetry/gpus/unassigned/")
        (t4_uuid,) = expected_gpus(T4_SCRAPE)
        rows = lead.page.locator("#unassigned-devices tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.first).to_contain_text(t4_uuid)
        expect(rows.first.locator("[data-suggestion]")).to_contain_text(T4_POOL[1])
        rows.first.locator("input[name=devices]").check()
        lead.page.locator("#assign-suggested").click()
        expect(lead.page.locator("#messages")).to_contain_text(f"1 GPU assigned to {T4_POOL[1]}")
        lead.settle()
        lead.page.screenshot(path=screenshot_dir / "newcomer-triage.png", full_page=True)

        after = lead.hourly_utilisation(T4_POOL[0])
        t4_pct = expected_gpus(T4_SCRAPE)[t4_uuid]["utilization_pct"]
        # The hour is the T4's alone now: its one GPU's utilisation, not the demo's curve.
        assert after[scrape_hour] == pytest.approx(t4_pct), (scrape_hour, after.get(scrape_hour))
        assert before.get(scrape_hour) != pytest.approx(t4_pct), before.get(scrape_hour)
        lead.page.screenshot(path=screenshot_dir / "newcomer-pool.png", full_page=True)
        lead.context.close()
        seconds_at["lead"] = time.monotonic() - started

        for user in ("ops", "procurement", "finance"):
            other = Session.sign_in(browser, stack, user, problems)
            other.settle()
            expect(other.page.locator("#kpi-gpus")).to_be_visible()
            other.context.close()
        serving = Session.sign_in(browser, stack, "lead-serving", problems)
        serving.walk_every_page(every_pool=False)
        serving.context.close()
        seconds_at["others"] = time.monotonic() - started

        # No command typed: beat evaluates the rule each minute, the worker posts; within
        # two minutes of the rule's saving, however long the walks above took.
        try:
            notifications = wait_until(
                lambda: receiver.received(WEBHOOK_PATH),
                timeout_seconds=max(
                    rule_saved_at + NOTIFICATION_TIMEOUT_SECONDS - time.monotonic(), 0
                ),
                what=f"the webhook notification, {NOTIFICATION_TIMEOUT_SECONDS} s after the rule",
            )
        except pytest.fail.Exception as timed_out:
            admin.visit("/alerts/deliveries/")
            deliveries = admin.page.locator("#content").inner_text()
            raise AssertionError(f"{timed_out}; the deliveries page:\n{deliveries}") from None
        (notification,) = notifications
        assert (notification["version"], notification["status"]) == ("4", "firing")
        assert notification["externalURL"] == stack.url
        (alert,) = notification["alerts"]
        assert alert["labels"]["pool"] == L40S_POOL[0]
        # The notification's link opens the alert in gpufleet.
        assert alert["generatorURL"].startswith(f"{stack.url}/alerts/")
        admin.visit(alert["generatorURL"])
        expect(admin.page.locator("#content")).to_contain_text(f"{L40S_POOL[1]}: utilisation")
        admin.page.screenshot(path=screenshot_dir / "newcomer-alert.png", full_page=True)
        admin.context.close()
        seconds_at["notified"] = time.monotonic() - started

        problems.assert_none()
    finally:
        receiver_server.shutdown()
        stack.stop()
    seconds_at["stopped"] = time.monotonic() - started
    print(
        f"\nnewcomer journey: ready after {stack.ready_after_seconds:.0f} s, then at "
        + ", ".join(f"{part} {seconds:.0f} s" for part, seconds in seconds_at.items())
    )


# The recorded scrapes whose GPU model the catalog names unambiguously; the vGPU profile
# asks a person to choose a board (walked in tests/browser/test_connect.py).
OWN_FLEET_SCRAPES = [path for path in SCRAPES if "vGPU" not in path.name]
OWN_ADMIN = ("owner", "owner@example.com", "an-own-fleet-password")


@pytest.mark.browser
@pytest.mark.worker
@pytest.mark.stack
@pytest.mark.prometheus
def test_a_fleet_of_ones_own_connects_its_prometheus(browser, tmp_path, screenshot_dir):
    """`make run DEMO=no`, a superuser made with createsuperuser, then the empty Overview's
    *Connect your fleet*: a real Prometheus scraping real dcgm-exporter text on localhost is
    tried, its proposed pools accepted, the worker pulls the last hour with nothing typed,
    and the Overview shows the fleet's GPUs and utilisation."""
    expected = {}
    for path in OWN_FLEET_SCRAPES:
        expected.update(expected_gpus(path))
    # Every GPU is read at the same instants, so the fleet's busy ÷ measured GPU-hours is
    # the mean of the GPUs' utilisations as the files state them.
    expected_utilization_pct = sum(gpu["utilization_pct"] for gpu in expected.values()) / len(
        expected
    )
    problems = Problems()
    scrapes = serve_dcgm_scrapes()
    prometheus = start_prometheus_scraping(scrapes, tmp_path, targets=OWN_FLEET_SCRAPES)
    # A pull reads whole steps of a minute, up to the last minute begun: the first pull
    # finds the scrapes once a minute has begun since Prometheus held them all.
    first_pullable = (time.time() // 60 + 1) * 60 + 1
    try:
        with newcomer_var_dir("own-fleet") as var_dir:
            stack = start_stack(var_dir, "own-fleet-stack.log", without_demo=True)
            try:
                assert "Demo sign-ins" not in stack.log_tail(200)
                username, email, password = OWN_ADMIN
                stack.create_superuser(username, password, email)
                context = browser.new_context(locale="en-GB", timezone_id="UTC")
                page = context.new_page()
                problems.watch(page, username)
                page.goto(f"{stack.url}/login/")
                page.fill("#id_username", username)
                page.fill("#id_password", password)
                page.click("form button[type=submit]")
                expect(page.locator("#current-user")).to_be_visible()

                page.get_by_role("link", name="Connect your fleet").first.click()
                expect(page).to_have_url(re.compile(r"/telemetry/connect/$"))
                page.get_by_label("Prometheus or VictoriaMetrics URL").fill(prometheus.base_url)
                page.get_by_role("button", name="Try it").click()
                expect(page.locator("#connect-gpu-count")).to_have_text(
                    str(len(expected)), timeout=30_000
                )
                time.sleep(max(0, first_pullable - time.time()))
                page.get_by_role("button", name="Connect the fleet").click()
                expect(page).to_have_url(re.compile(r"/telemetry/connect/\d+/$"), timeout=15_000)
                expect(page.locator("#connect-pool-table")).to_be_visible(timeout=90_000)
                expect(page.locator("#connect-pool-table")).not_to_contain_text("—")
                page.screenshot(path=screenshot_dir / "own-fleet-connected.png", full_page=True)

                page.goto(f"{stack.url}/")
                expect(page.locator("#kpi-gpus .kpi-value")).to_contain_text(str(len(expected)))
                shown = page.locator("#kpi-utilization .kpi-value").inner_text()
                page.screenshot(path=screenshot_dir / "own-fleet-overview.png", full_page=True)
                shown_pct = float(re.search(r"([\d.]+)\s*%", shown).group(1))
                assert shown_pct == pytest.approx(expected_utilization_pct, abs=0.05)
                context.close()
            finally:
                stack.stop()
    finally:
        prometheus.stop()
        scrapes.stop()
    problems.assert_none()
