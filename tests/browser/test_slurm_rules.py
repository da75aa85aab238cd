"""A technical lead adds a Slurm mapping rule in Chromium: the stored jobs are re-mapped
at once, the jobs list names the workload and counts the jobs no rule maps; screenshots
in both languages."""

from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from apps.slurm.services import import_sacct
from tests.factories import TEST_PASSWORD, ClusterFactory, WorkloadFactory

SACCT = "\n".join(
    [
        "JobID|User|Account|State|Start|End|Elapsed|NNodes|NodeList|AllocTRES",
        "100|alice|proj-llm|COMPLETED|2026-11-02T08:00:00|2026-11-02T11:00:00|03:00:00|1|"
        "gpu01|gres/gpu=8",
        "101|bob|chem|COMPLETED|2026-11-02T08:00:00|2026-11-02T09:00:00|01:00:00|1|gpu02|"
        "gres/gpu=1",
    ]
)


@pytest.mark.browser
def test_a_lead_adds_a_mapping_rule_and_the_jobs_follow(
    page, live_server, make_user, transactional_db, screenshot_dir
):
    cluster = ClusterFactory(name="Hopper", slug="hopper", timezone="UTC")
    WorkloadFactory(name="LLM pre-training", slug="llm")
    import_sacct(cluster, SACCT, now=datetime(2026, 11, 3, tzinfo=UTC))
    lead = make_user("lead")
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", lead.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()

    page.goto(f"{live_server.url}/slurm/jobs/")
    expect(page.locator("#slurm-jobs-unmapped")).to_contain_text("2 no rule maps")
    page.get_by_role("link", name="Mapping rules").click()
    page.get_by_role("link", name="Add a rule").first.click()
    page.select_option("#id_field", "account")
    page.fill("#id_pattern", "proj-*")
    page.select_option("#id_workload", label="LLM pre-training")
    page.get_by_role("button", name="Save rule").click()
    expect(page.locator("body")).to_contain_text("1 job re-mapped")
    expect(page.locator("#slurm-rule-table")).to_contain_text("proj-*")
    expect(page.locator("#slurm-unmapped-count")).to_contain_text("1 of 2 jobs")
    page.screenshot(path=screenshot_dir / "slurm-rules.png", full_page=True)

    page.goto(f"{live_server.url}/slurm/jobs/")
    expect(page.locator("#slurm-job-table")).to_contain_text("LLM pre-training")
    expect(page.locator("#slurm-jobs-unmapped")).to_contain_text("1 no rule maps")
    page.screenshot(path=screenshot_dir / "slurm-jobs-mapped.png", full_page=True)

    page.context.add_cookies(
        [{"name": "django_language", "value": "zh-hans", "url": live_server.url}]
    )
    page.goto(f"{live_server.url}/slurm/rules/")
    page.screenshot(path=screenshot_dir / "slurm-rules-zh.png", full_page=True)
    page.goto(f"{live_server.url}/slurm/rules/new/")
    page.screenshot(path=screenshot_dir / "slurm-rule-form-zh.png", full_page=True)
