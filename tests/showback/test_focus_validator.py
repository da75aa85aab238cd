"""Conformance: the FinOps Foundation's focus-validator passes the FOCUS export of the
demo's last full month, and of a month built for the purpose, with no failed MUST rule.

The validator needs Python 3.12+, so it runs from its own environment, which
scripts/ensure_focus_validator.sh installs (``make test`` runs it). The month is
tests/showback/fleet.py's March 2026 (cloud pools split by pod labels and by declared
GPUs, a shared pool, a pool without workloads, unallocated capacity) with an owned
bare-metal pool and a cloud provider's name added. February is closed, then a price is
back-dated into it: the file also holds February's frozen rows (one charge period, the
month) and the adjustment March books for it.

The validator writes a JUnit report (``--output-type unittest``): one test case per rule,
named ``<rule id> :: <check>``, failed or in error when the rule does not hold. Whether a
rule is a MUST is read from the validator's own model of the specification.
"""

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone

from apps.pools.models import Deployment
from apps.pools.prices import record_prices
from apps.reports.cost.periods import next_month_start
from apps.showback.focus.exports import FOCUS_VERSION, focus_csv
from apps.showback.focus.rows import focus_rows
from apps.showback.months import last_complete_month
from apps.showback.periods import close_month
from tests.factories import PoolFactory, UserFactory, WorkloadFactory
from tests.showback.fleet import MONTH_END, MONTH_START, make_fleet

# Where scripts/ensure_focus_validator.sh installs it (the Makefile passes the same path).
VALIDATOR_VERSION = os.environ.get("FOCUS_VALIDATOR_VERSION", "2.2.1")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
VENV = Path(
    os.environ.get("FOCUS_VALIDATOR_VENV")
    or CACHE / "gpufleet" / f"focus-validator-{VALIDATOR_VERSION}"
)
VALIDATOR = VENV / "bin" / "focus-validator"
# What gpufleet's data has, so the validator checks the columns that carry it.
FEBRUARY = datetime(2026, 2, 1, tzinfo=UTC)
APPLICABILITY = (
    "USAGE_MEASUREMENT_SUPPORTED",
    "SUB_ACCOUNT_SUPPORTED",
    "TAGGING_SUPPORTED",
    "BILLING_BASED_ON_PROVISIONED_RESOURCES_SUPPORTED",
    "RESOURCE_TYPE_ASSIGNMENT_SUPPORTED",
    "NEGOTIATED_PRICING_SUPPORTED",
    "REGION_SUPPORTED",
    "ACCOUNT_NAMING_SUPPORTED",
)
MUST = {"MUST", "MUST NOT"}


def validator_command(data_file: Path, report: Path) -> list[str]:
    return [
        str(VALIDATOR),
        "--data-file",
        str(data_file),
        "--validate-version",
        FOCUS_VERSION,
        # Offline: the model of FOCUS 1.2 ships with the validator.
        "--block-download",
        "--applicability-criteria",
        ",".join(APPLICABILITY),
        "--output-type",
        "unittest",
        "--output-destination",
        str(report),
    ]


def _site_packages() -> Path:
    found = sorted(VENV.glob("lib/python3.*/site-packages/focus_validator"))
    assert found, f"focus-validator is not installed in {VENV}: scripts/ensure_focus_validator.sh"
    return found[-1].parent


def _model_rules(site_packages: Path) -> dict:
    """The validator's model of the specification: rule id → rule."""
    (model,) = (site_packages / "focus_validator" / "rules").glob(f"model-{FOCUS_VERSION}*.json")
    return json.loads(model.read_text())["ModelRules"]


def _alternatives(requirement) -> list[str]:
    """The rules an OR of ``requirement`` names: alternatives, one of which is enough."""
    found = []
    if isinstance(requirement, dict):
        items = requirement.get("Items", [])
        if requirement.get("CheckFunction") == "OR":
            found += [item["ModelRuleId"] for item in items if "ModelRuleId" in item]
        for item in items:
            found += _alternatives(item)
    return found


def must_failures(failed: dict[str, str], rules: dict) -> dict[str, str]:
    """The failed rules whose keyword is MUST or MUST NOT, less the alternatives of a
    rule that holds ("null when …" or "not null when …": one of them fails by design)."""
    unchosen = set()
    for rule_id, rule in rules.items():
        if rule_id not in failed:
            unchosen.update(_alternatives(rule["ValidationCriteria"].get("Requirement")))
    return {
        rule_id: message
        for rule_id, message in failed.items()
        if rule_id not in unchosen
        and rules.get(rule_id, {}).get("ValidationCriteria", {}).get("Keyword", "MUST") in MUST
    }


def failed_rules(report: Path) -> tuple[int, dict[str, str]]:
    """(test cases, {rule id: message} of the failed or erroneous ones)."""
    # The report is the validator's, written by this test: not untrusted input.
    cases = list(ET.parse(report).getroot().iter("testcase"))  # noqa: S314
    failed = {}
    for case in cases:
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            failed[case.get("name").split(" :: ")[0].strip()] = problem.get("message", "")
    return len(cases), failed


@pytest.fixture
def month(demo):
    _teams, pools, _workloads = make_fleet()
    close_month(date(2026, 2, 1), UserFactory(role="finance"))
    pools["pool-c"].on_demand_price_per_gpu_hour_usd = Decimal(2)
    record_prices(pools["pool-c"], datetime(2026, 2, 20, tzinfo=UTC))
    # Names as gpufleet's users write them: the FOCUS columns carry them in ASCII.
    pools["pool-a"].name = "Training · H100 · Shanghai"
    pools["pool-a"].save()
    pools["pool-b"].provider = "Example Cloud"
    pools["pool-b"].region = "eu-west-1"
    pools["pool-b"].save()
    owned = PoolFactory(
        name="Owned",
        slug="owned",
        deployment=Deployment.BARE_METAL,
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=None,
        purchase_price_per_gpu_usd=Decimal(24000),
        amortisation_months=48,
        pue=Decimal("1.25"),
        power_price_per_kwh_usd=Decimal("0.10"),
        operations_per_month_usd=Decimal(7300),
        in_service_from=MONTH_START,
    )
    WorkloadFactory(name="Owned job", slug="owned-job", pool=owned, gpu_count=4)
    rows = focus_rows(FEBRUARY, MONTH_END)
    assert {row.kind for row in rows} == {
        "workload",
        "unallocated",
        "unattributed",
        "adjustment",
    }
    assert {row.closed_month for row in rows} == {"", "2026-02"}
    return rows


def test_the_validator_finds_no_failed_must_rule(month, tmp_path):
    # The demo's last full month (closed when the demo was seeded: its frozen rows) in
    # the same file; the demo's pools were not in service in February and March.
    demo_month = last_complete_month(timezone.now())
    demo_rows = focus_rows(demo_month, next_month_start(demo_month))
    assert {row.closed_month for row in demo_rows} == {f"{demo_month:%Y-%m}"}
    assert sum(row.billed for row in demo_rows) > 0
    data_file = tmp_path / "march.csv"
    data_file.write_text(focus_csv(month + demo_rows), encoding="utf-8")
    if os.environ.get("FOCUS_KEEP"):
        Path(os.environ["FOCUS_KEEP"]).write_text(data_file.read_text(), encoding="utf-8")
    report = tmp_path / "report.xml"
    site_packages = _site_packages()
    # The validator reads its currency list by a path relative to its package's parent.
    result = subprocess.run(
        validator_command(data_file, report),
        cwd=site_packages,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert report.exists(), result.stdout[-3000:]
    cases, failed = failed_rules(report)
    rules = _model_rules(site_packages)
    # The validator ran the specification's rules, not nothing.
    assert cases > 400, cases
    assert "CostAndUsage-D-000-M" in rules and "CostAndUsage-D-000-M" not in failed, failed
    failed_must = must_failures(failed, rules)
    assert failed_must == {}, "\n".join(f"{rule}: {text}" for rule, text in failed_must.items())
