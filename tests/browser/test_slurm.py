"""A technical lead pastes sacct output for a cluster in Chromium, reads the counts and
the refused line, then the jobs list with its GPU-hours; screenshots in both languages."""

import pytest
from playwright.sync_api import expect

from tests.factories import TEST_PASSWORD, ClusterFactory

SACCT = "\n".join(
    [
        "JobID|User|Account|State|Start|End|Elapsed|NNodes|NodeList|AllocTRES",
        "100|alice|physics|COMPLETED|2026-11-02T08:00:00|2026-11-02T11:00:00|03:00:00|2|"
        "gpu[01-02]|billing=64,gres/gpu:h100=8,gres/gpu=8,node=2",
        "100.extern|||COMPLETED|2026-11-02T08:00:00|2026-11-02T11:00:00|03:00:00|2|"
        "gpu[01-02]|billing=64,gres/gpu:h100=8,gres/gpu=8,node=2",
        "101|bob|chem|COMPLETED|2026-11-02T08:00:00|2026-11-02T09:00:00|1:2|1|gpu03|gres/gpu=1",
    ]
)


@pytest.mark.browser
def test_a_lead_imports_sacct_output_and_reads_the_jobs(
    page, live_server, make_user, transactional_db, screenshot_dir
):
    ClusterFactory(name="Hopper", slug="hopper", timezone="UTC")
    lead = make_user("lead")
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", lead.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()

    page.goto(f"{live_server.url}/slurm/jobs/")
    expect(page.locator(".empty-title")).to_contain_text("No Slurm jobs yet")
    page.goto(f"{live_server.url}/clusters/hopper/")
    page.get_by_role("link", name="Import Slurm accounting").click()
    expect(page.locator("#id_cluster")).to_have_value("hopper")
    page.fill("#id_text", SACCT)
    page.locator("#slurm-import-form button[type=submit]").click()

    expect(page.locator('[data-count="accepted"]')).to_have_text("1")
    expect(page.locator('[data-count="rejected"]')).to_have_text("1")
    expect(page.locator('[data-count="steps"]')).to_have_text("1")
    expect(page.locator("#slurm-import-errors")).to_contain_text(
        "line 4: Elapsed '1:2' is not D-HH:MM:SS, HH:MM:SS or MM:SS.mmm"
    )
    page.screenshot(path=screenshot_dir / "slurm-import.png", full_page=True)

    page.goto(f"{live_server.url}/slurm/jobs/")
    # 8 GPUs × 3 h; the .extern row adds nothing.
    expect(page.locator("#slurm-jobs-gpu-hours")).to_have_text("24.00 GPU-h")
    expect(page.locator("#slurm-job-table")).to_contain_text("h100")
    page.screenshot(path=screenshot_dir / "slurm-jobs.png", full_page=True)

    page.context.add_cookies(
        [{"name": "django_language", "value": "zh-hans", "url": live_server.url}]
    )
    page.goto(f"{live_server.url}/clusters/")
    expect(page.locator("#cluster-table")).to_contain_text("Hopper")
    page.screenshot(path=screenshot_dir / "clusters-zh.png", full_page=True)
    page.goto(f"{live_server.url}/slurm/jobs/")
    page.screenshot(path=screenshot_dir / "slurm-jobs-zh.png", full_page=True)


@pytest.mark.browser
def test_a_user_reads_the_week_s_gpu_efficiency(
    page, live_server, make_user, transactional_db, screenshot_dir
):
    from tests.slurm.efficiency_data import build_week

    week = build_week()
    viewer = make_user("reader")
    # A member of Vision reads its name; other teams' are not named to others.
    viewer.teams.add(week["team"])
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", viewer.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()

    page.goto(f"{live_server.url}/slurm/jobs/")
    page.get_by_role("link", name="Slurm GPU efficiency").click()
    page.fill("#id_week", "2026-12-02")
    page.select_option("#id_group", "team")
    page.locator("#efficiency-filter button[type=submit]").click()
    expect(page.locator("#efficiency-week")).to_contain_text("2026-11-30 to 2026-12-06")
    # 1 GPU-h unmeasured for each of alice's jobs 500 and 502 (tests/slurm/efficiency_data.py).
    expect(page.locator("#efficiency-totals")).to_contain_text("2.00 GPU-h")
    expect(page.locator("#efficiency-table")).to_contain_text("Vision")
    expect(page.locator("#efficiency-table")).to_contain_text("no team")
    expect(page.locator("#efficiency-unused")).to_contain_text("501_2")
    page.screenshot(path=screenshot_dir / "slurm-efficiency.png", full_page=True)

    page.context.add_cookies(
        [{"name": "django_language", "value": "zh-hans", "url": live_server.url}]
    )
    page.reload()
    expect(page.locator("#efficiency-ranked")).to_contain_text("500")
    page.screenshot(path=screenshot_dir / "slurm-efficiency-zh.png", full_page=True)
