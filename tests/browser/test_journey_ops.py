"""The ops engineer's journey on the demo fleet, in English and in Chinese: from the
fleet view to a policy, a restore drill that fails its RPO recorded without a reload
(verdict, reason, one RPO unit, the retry date, the history), the fleet view and the
Overview counting it as failing, and a policy without versions pointing to where one is
registered."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.backups.models import BackupPolicy, BackupVersion, DrillVerdict, RestoreDrill
from tests.factories import TEST_PASSWORD

LOCAL = "%Y-%m-%dT%H:%M"  # datetime-local, read in TIME_ZONE (UTC in tests)
SECONDS_PER_DAY = 86400

# The demo's 70B pre-training run: its latest drill passed, its RPO target is 120 min,
# and it keeps a warm checkpoint about 12 days old, far older than that target.
POLICY_SLUG = "llama3-70b-pretrain"
RPO_TARGET_MINUTES = 120
RETRY_DAYS = 7  # the policy's default retry interval, shorter than its 30-day frequency
# The demo's domain-adaptation run has a policy and no version registered yet.
NO_VERSION_SLUG = "llama3-8b-domain-adapt"

TEXT = {
    "en": {
        "recorded": "Drill recorded: it failed.",
        "failed": "Failed",
        "badge_failed": "failed",
        "failing": "failing",
        "retry": "(retry)",
        "days": "days",
        "reason": "The restored version was {actual} old against an RPO of {target}.",
        "last_failed": "Last drill {when} failed.",
        "due": "Next drill due {due}",
        "after_failed": "({days} days after the failed drill).",
        "history": "Drill of {when}",
        "attention": "{count} backup policies' latest restore drills failed.",
        "blocked": "Register a version of this policy's software before recording a drill",
        "blocked_title": "No version to drill yet",
        "register": "Register a version",
    },
    "zh-hans": {
        "recorded": "演练已记录：演练失败。",
        "failed": "失败",
        "badge_failed": "失败",
        "failing": "失败",
        "retry": "（重试）",
        "days": "天",
        "reason": "恢复的版本已存在 {actual}，RPO 目标为 {target}。",
        "last_failed": "上次演练 {when}，失败。",
        "due": "下次演练 {due} 到期",
        "after_failed": "（失败演练后 {days} 天）。",
        "history": "{when} 的演练",
        "attention": "{count} 个备份策略最近一次恢复演练失败。",
        "blocked": "请先登记此策略对应软件的一个版本，再记录演练",
        "blocked_title": "还没有可演练的版本",
        "register": "登记版本",
    },
}


@pytest.fixture
def demo_fleet(transactional_db, demo):
    """The demo fleet, committed for the live server."""


def _days(seconds: float, word: str) -> str:
    """A duration in days as the page writes one below and above 1 (recovery_units):
    two significant digits under a day, one decimal from there on."""
    value = seconds / SECONDS_PER_DAY
    return f"{value:.2g} {word}" if value < 1 else f"{value:,.1f} {word}"


@pytest.mark.browser
# One language per journey (the lead's in English, ops' and procurement's in Chinese):
# every page in both is rendered by tests/*/test_in_chinese.py and
# tests/browser/test_wide_tables.py.
@pytest.mark.parametrize("lang", ["zh-hans"])
def test_ops_records_a_failed_drill_and_the_fleet_counts_it(
    page, live_server, make_user, demo_fleet, lang, screenshot_dir
):
    text = TEXT[lang]

    def shot(number, step):
        page.screenshot(path=str(screenshot_dir / f"journey-ops-{lang}-{number:02d}-{step}.png"))

    policy = BackupPolicy.objects.get(workload__slug=POLICY_SLUG)
    assert policy.rpo_minutes == RPO_TARGET_MINUTES
    assert policy.drill_retry_interval_days == RETRY_DAYS
    assert policy.last_drill_passed is True
    warm = BackupVersion.objects.get(workload=policy.workload, tier="warm")
    checksums = list(warm.checksums.order_by("node").values_list("node", "checksum"))
    failing_before = BackupPolicy.objects.filter(last_drill_passed=False).count()
    drills_before = set(policy.drills.values_list("pk", flat=True))

    user = make_user("ops")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.context.add_cookies([{"name": "django_language", "value": lang, "url": live_server.url}])
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()
    expect(page.locator("html")).to_have_attribute("lang", lang)

    # 1. The fleet view, before: the demo's failing policies, this one not among them.
    page.goto(f"{live_server.url}/backups/")
    expect(page.locator("#summary-failing")).to_have_text(str(failing_before))
    row = page.locator(f"tr[data-workload='{POLICY_SLUG}']")
    expect(row.locator(".badge.bg-red-lt")).to_have_count(0)
    shot(1, "fleet-before")

    # 2. The policy, from its row.
    row.locator(f"a[href='/backups/{POLICY_SLUG}/']").click()
    expect(page).to_have_url(f"{live_server.url}/backups/{POLICY_SLUG}/")
    expect(page.locator("#drill-status .badge.bg-red-lt")).to_have_count(0)
    shot(2, "policy")
    page.evaluate("window.__noReload = true")

    # 3. A drill of the 12-day-old warm checkpoint: restored, resumed, every checksum
    # matching, but the version is older than the 120-minute RPO.
    start = (timezone.now() - timedelta(minutes=40)).replace(second=0, microsecond=0)
    finish = start + timedelta(minutes=30)
    page.select_option("#id_version", str(warm.pk))
    page.select_option("#id_restored_from_tier", "warm")
    page.fill("#id_started_at", start.strftime(LOCAL))
    page.fill("#id_finished_at", finish.strftime(LOCAL))
    expect(page.locator("#id_resumed")).to_be_checked()
    page.select_option("#id_outcome", "restored")
    page.fill("#id_observed_checksums", "\n".join(f"{node} {sha}" for node, sha in checksums))
    page.locator("#drill-form-card").scroll_into_view_if_needed()
    shot(3, "drill-form")
    page.click("#drill-submit")

    # 4. The compliance column and the history change in place.
    expect(page.locator("#drill-recorded")).to_have_text(text["recorded"])
    actual_rpo_seconds = round((start - warm.created_at).total_seconds())
    target_rpo_seconds = RPO_TARGET_MINUTES * 60
    actual = _days(actual_rpo_seconds, text["days"])
    target = _days(target_rpo_seconds, text["days"])
    expect(page.locator("#latest-drill-result")).to_have_text(text["failed"])
    expect(page.locator("#latest-drill")).to_contain_text(f"{actual} / {target}")
    expect(page.locator("#latest-drill-reasons li")).to_have_text(
        [text["reason"].format(actual=actual, target=target)]
    )
    # One RPO unit on the page: the targets card, the latest drill and every table row.
    expect(page.locator("#rpo-target")).to_have_text(target)
    rpo_cells = page.locator("#drill-table tbody tr td:nth-child(6)")
    expect(rpo_cells).to_have_count(len(drills_before) + 1)
    for index in range(len(drills_before) + 1):
        expect(rpo_cells.nth(index)).to_contain_text(f" {text['days']} (")
    due = finish + timedelta(days=RETRY_DAYS)
    schedule = page.locator("#drill-schedule")
    expect(schedule).to_contain_text(text["last_failed"].format(when=f"{finish:%Y-%m-%d %H:%M}"))
    expect(schedule).to_contain_text(text["due"].format(due=f"{due:%Y-%m-%d}"))
    expect(schedule).to_contain_text(text["after_failed"].format(days=RETRY_DAYS))
    expect(page.locator("#drill-status .card-actions .badge.bg-red-lt")).to_have_text(
        text["failing"]
    )
    expect(page.locator("#history")).to_contain_text(
        text["history"].format(when=f"{finish:%Y-%m-%d %H:%M}")
    )
    expect(page.locator("#history")).to_have_count(1)
    # No template comment or tag leaks into the page as text.
    expect(page.locator("body")).not_to_contain_text("{#")
    page.locator("#drill-status").scroll_into_view_if_needed()
    shot(4, "drill-failed")
    page.locator("#history").scroll_into_view_if_needed()
    shot(5, "history")
    assert page.evaluate("window.__noReload") is True, "the page reloaded"

    drill = policy.drills.exclude(pk__in=drills_before).get()
    assert drill.version == warm
    assert drill.performed_by == user
    assert (drill.started_at, drill.finished_at) == (start, finish)
    assert drill.verdict == DrillVerdict.FAILED and drill.passed is False
    assert drill.actual_rpo_seconds == actual_rpo_seconds
    assert drill.rpo_target_minutes == RPO_TARGET_MINUTES
    assert drill.actual_rto_seconds == 30 * 60
    assert (drill.checksums_compared, drill.checksums_matched) == (len(checksums),) * 2
    assert drill.checksum_mismatches == []
    # Stored in English whatever the page's language.
    assert drill.failure_reasons == [
        TEXT["en"]["reason"].format(
            actual=_days(actual_rpo_seconds, "days"), target=_days(target_rpo_seconds, "days")
        )
    ]
    policy.refresh_from_db()
    assert policy.last_drill_at == finish
    assert policy.last_drill_passed is False
    assert policy.drill_due_at == finish + timedelta(days=RETRY_DAYS)
    assert policy.overdue_since is None

    # 6. The fleet view counts it as failing, with its retry date.
    page.goto(f"{live_server.url}/backups/")
    expect(page.locator("#summary-failing")).to_have_text(str(failing_before + 1))
    row = page.locator(f"tr[data-workload='{POLICY_SLUG}']")
    expect(row.locator(".badge.bg-red-lt").first).to_be_visible()
    expect(row).to_contain_text(text["badge_failed"])
    expect(row).to_contain_text(f"{due:%Y-%m-%d} {text['retry']}")
    row.scroll_into_view_if_needed()
    shot(6, "fleet-after")

    # 7. The Overview's "Needs a person" lists the failing drills and links to the fleet.
    page.goto(f"{live_server.url}/")
    item = page.locator("#attention [data-attention='drills-failing']")
    expect(item).to_contain_text(text["attention"].format(count=failing_before + 1))
    expect(item.locator("a")).to_have_attribute("href", "/backups/")
    page.locator("#attention").scroll_into_view_if_needed()
    shot(7, "overview")

    # 8. A policy without versions says what to register first, and links there.
    page.goto(f"{live_server.url}/backups/{NO_VERSION_SLUG}/")
    blocked = page.locator("#drill-blocked")
    expect(blocked).to_contain_text(text["blocked_title"])
    expect(blocked).to_contain_text(text["blocked"])
    expect(page.locator("#drill-form")).to_have_count(0)
    expect(page.locator("body")).not_to_contain_text("{#")
    blocked.scroll_into_view_if_needed()
    shot(8, "no-version")
    page.click("#drill-blocked-link")
    expect(page).to_have_url(f"{live_server.url}/backups/{NO_VERSION_SLUG}/versions/new/")
    expect(page.locator("#version-form")).to_be_visible()
    expect(page.locator(".page-title").first).to_have_text(text["register"])
    shot(9, "register-version")
    assert not RestoreDrill.objects.filter(policy__workload__slug=NO_VERSION_SLUG).exists()
