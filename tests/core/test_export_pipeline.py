"""Every export goes through apps/core/exports.py: each declares its tables with the core
``Column`` spec (``EXPORTS``), no module outside core writes CSV rows, XLSX cells or PDF
tables by hand, and a name starting like a formula is neutralised in the CSV and XLSX of
every export."""

import csv
import importlib
import io
import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from openpyxl import load_workbook

from apps.core.exports import EXPORTS, CellType, Column

APPS = Path(__file__).resolve().parents[2] / "apps"
CORE = APPS / "core" / "exports.py"
HOSTILE = ["=1+1", "+SUM(A1)", "-2+3", "@cmd"]


def _export_modules() -> list[str]:
    """Every module named like an export: ``*exports*.py`` and ``exports/`` packages."""
    paths = {*APPS.rglob("*exports*.py"), *APPS.rglob("exports/*.py")}
    return sorted(
        ".".join(path.relative_to(APPS.parent).with_suffix("").parts)
        for path in paths
        if path != CORE and "migrations" not in path.parts and path.name != "__init__.py"
    )


def _registered() -> dict:
    for module in _export_modules():
        importlib.import_module(module)
    return dict(EXPORTS)


def test_every_export_module_belongs_to_a_registered_export():
    registered = _registered()
    owners = {export.module.rsplit(".", 1)[0] for export in registered.values()} | {
        export.module for export in registered.values()
    }
    for module in _export_modules():
        assert module in owners or module.rsplit(".", 1)[0] in owners, module


def test_every_export_declares_its_tables_with_the_core_column_spec():
    registered = _registered()
    assert set(registered) == set(HOSTILE_FILES)
    for name, export in registered.items():
        assert export.formats, name
        tables = export.tables()
        assert tables, name
        for table, columns in tables.items():
            assert columns, (name, table)
            for column in columns:
                assert isinstance(column, Column), (name, table, column)
                assert isinstance(column.type, CellType), (name, table, column.header)
                assert str(column.header).strip(), (name, table)
            headers = [str(column.header) for column in columns]
            assert len(set(headers)) == len(headers), (name, table, headers)


# Writing by hand: a csv writer, a row or a cell put straight into a sheet, a reportlab
# table built outside the core writer.
HAND_WRITTEN = re.compile(
    r"csv\.writer\(|\.writerow\(|sheet\.append\(|\.cell\(row=|import[^\n]*\bTable\b[^\n]*$",
    re.M,
)


def test_no_export_writes_rows_or_cells_by_hand():
    offenders = []
    for path in APPS.rglob("*.py"):
        if path == CORE or "migrations" in path.parts:
            continue
        text = path.read_text()
        if "openpyxl" not in text and "reportlab" not in text and "csv" not in text:
            continue
        for match in HAND_WRITTEN.finditer(text):
            line = text[: match.start()].count("\n") + 1
            offenders.append(f"{path.relative_to(APPS.parent)}:{line}: {match.group(0)}")
    assert not offenders, offenders


# --- each export, written with a hostile name ------------------------------------------


def _cost_report(name):
    from apps.reports import exports
    from apps.reports.cost.rows import CostRow

    rows = [CostRow(key="k", label=name)]
    filters = {"group_by": "pool", "start": "2026-03-09", "end": "2026-03-12"}
    return {"csv": exports.cost_report_csv(rows), "xlsx": exports.cost_report_xlsx(rows, filters)}


def _lendable(name):
    from apps.pools.models import Pool
    from apps.reports import exports
    from apps.reports.lending.capacity import FleetLendable, Lendable

    pool = Pool(name=name, gpu_count=8, effective_price_per_gpu_hour_usd=Decimal("2.5"))
    now = datetime(2026, 3, 9, tzinfo=UTC)
    fleet = FleetLendable([Lendable(pool, now, now, 10, 1)])
    return {"csv": exports.lendable_csv(fleet)}


def _showback(name):
    from apps.showback import exports

    rows = [{"name": name, "slug": "team", "cost_usd": Decimal("1.25"), "cost": Decimal("1.25")}]
    return {
        "csv": exports.showback_csv(rows, Decimal("1.25"), Decimal("1.25")),
        "xlsx": exports.showback_xlsx(rows, Decimal("1.25"), Decimal("1.25")),
    }


def _audit_bundle(name):
    from apps.accounts.models import Team
    from apps.showback import audit_exports
    from apps.showback.audit import AuditBundle, PoolCost

    now = datetime(2026, 3, 1, tzinfo=UTC)
    bundle = AuditBundle(
        team=Team(name=name, slug="team"),
        month="2026-03",
        start=now,
        end=now,
        pools=[PoolCost("pool", name, Decimal("1.25"))],
        workloads=[],
        drills=[],
        total_usd=Decimal("1.25"),
    )
    return {"xlsx": audit_exports.build_xlsx(bundle)}


def _procurement(name):
    from apps.catalog.models import GpuModel
    from apps.procurement.comparison.demand import DemandInfo
    from apps.procurement.comparison.services import OptionRow, ScenarioComparison
    from apps.procurement.exports import spreadsheets
    from apps.procurement.models import Scenario, ScenarioOption

    scenario = Scenario(name=name, currency="USD")
    option = ScenarioOption(name=name, gpu_model=GpuModel(name="H100"), scenario=scenario)
    result = ScenarioComparison(
        scenario, None, DemandInfo(source_label="typed"), [OptionRow(option)], None
    )
    return {"csv": spreadsheets.build_csv(result), "xlsx": spreadsheets.build_xlsx(result)}


def _focus(name):
    from apps.accounts.models import Team
    from apps.pools.models import Pool
    from apps.showback.focus.exports import focus_csv
    from apps.showback.focus.rows import FocusRow

    day = datetime(2026, 3, 9, tzinfo=UTC)
    row = FocusRow(
        pool=Pool(name=name, slug="pool"),
        kind="adjustment",
        charge_start=day,
        charge_end=day,
        gpu_hours=-2.0,
        cost_usd=Decimal("-5"),
        unit_price_usd=Decimal("2.5"),
        label=name,
        team=Team(name=name, slug="team"),
        billed=Decimal("-5.00"),
    )
    content = focus_csv([row])
    # Amounts stay numbers: a negative adjustment is -5.00, never text with a quote.
    assert "-5.00" in next(csv.reader(io.StringIO(content.splitlines()[1])))
    return {"csv": content}


def _slurm_efficiency(name):
    from apps.slurm.efficiency import Figures
    from apps.slurm.exports import efficiency_csv

    row = {"key": name, "name": name, "cluster": name, **Figures(jobs=1).shown()}
    job = {**row, "job_id": name, "cluster": name, "user": name, "account": name}
    job.update(team=name, start=None, end=None, gpus=1)
    content = efficiency_csv([row], "user")
    assert efficiency_csv([job], "job").count("'" + name) == 5
    return {"csv": content}


HOSTILE_FILES = {
    "reports.cost": _cost_report,
    "reports.lendable": _lendable,
    "showback": _showback,
    "showback.audit_bundle": _audit_bundle,
    "procurement.comparison": _procurement,
    "showback.focus": _focus,
    "slurm-efficiency": _slurm_efficiency,
}


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("export", sorted(HOSTILE_FILES))
def test_a_formula_name_is_neutralised_in_every_csv_and_xlsx(export, name):
    formats = set(_registered()[export].formats) & {"csv", "xlsx"}
    files = HOSTILE_FILES[export](name)
    assert formats == set(files), export
    if "csv" in files:
        content = files["csv"]
        text = content.decode("utf-8-sig") if isinstance(content, bytes) else content
        cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
        assert "'" + name in cells, (export, name)
        assert name not in cells, (export, name)
    if "xlsx" in files:
        workbook = load_workbook(io.BytesIO(files["xlsx"]))
        found = [
            cell
            for sheet in workbook.worksheets
            for row in sheet.iter_rows()
            for cell in row
            if cell.value == name
        ]
        assert found, (export, name)
        for cell in found:
            assert cell.data_type == "s" and cell.quotePrefix, (export, name, cell.coordinate)
