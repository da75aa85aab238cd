"""The FOCUS dataset as CSV, written by apps/core/exports.py, and its metadata.

The columns are FOCUS 1.2's (``FOCUS_VERSION``): every column the specification makes
mandatory, the conditional ones gpufleet has the data for (usage, unit prices, resources,
sub accounts, tags, regions), then gpufleet's own, prefixed ``x_`` as FOCUS asks of custom
columns. FOCUS's string columns are ASCII, as the validator checks them (``ascii_text``);
names are exact in the ``x_`` columns. Values stay machine-readable: timestamps in FOCUS's
ISO 8601 form, numbers as numbers (a negative adjustment is written -5.00, never as
text), Tags as a JSON object, and a null as an empty cell. Names are data: a name that
would start a spreadsheet formula gets the pipeline's leading ``'``, as in every export.

A CSV has nowhere to state its version, so the version travels beside it: the
``FOCUS-Version`` response header, the file name, and the metadata document
(``metadata``), FOCUS's own description of a dataset (data generator, schema with its
FocusVersion and column definitions) that ``manage.py export_focus`` writes as a sidecar.
"""

import json
import unicodedata
from datetime import UTC, datetime

from django.http import HttpResponse
from django.utils import timezone

from apps.core.exports import CellType, Column, CsvFile, register, values
from apps.core.money import rounded
from apps.currencies.codes import reporting_currency
from apps.pools.models import Pool
from apps.reports.cost.rows import cluster_slug_of
from apps.showback.focus.rows import ADJUSTMENT, FocusRow

FOCUS_VERSION = "1.2"
FORMATS = ("csv",)
DATA_GENERATOR = "gpufleet"
# Provider-defined tag keys carry the provider's prefix (FOCUS Tags).
TAG_PREFIX = "gpufleet/"
# Quantities to the millionth of a GPU-hour: far below a GPU-second.
QUANTITY_PLACES = 6
GPU_HOURS = "GPU-Hours"
SERVICE_CATEGORY = "AI and Machine Learning"
SERVICE_SUBCATEGORY = "AI Platforms"


def focus_billing_currency() -> str:
    """The ISO 4217 currency every amount of the dataset is in (the reporting currency):
    the one place it is read."""
    return reporting_currency()


def timestamp(moment: datetime | None) -> str | None:
    """FOCUS's DateTimeFormat: ISO 8601 in UTC, ``2026-10-01T00:00:00Z``."""
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# Punctuation gpufleet's names use that has a plain ASCII stand-in.
ASCII_STAND_INS = str.maketrans({"·": "-", "–": "-", "—": "-", "×": "x", "’": "'", "‘": "'"})


def ascii_text(text: str | None, fallback: str | None = None) -> str | None:
    """``text`` for a FOCUS string column, which the validator requires in ASCII: as it is
    when it is ASCII; accents dropped and ``ASCII_STAND_INS`` replaced when that is enough;
    else ``fallback`` (a slug). The exact text is in the ``x_`` columns."""
    if not text:
        return fallback
    if text.isascii():
        return text
    folded = unicodedata.normalize("NFKD", text.translate(ASCII_STAND_INS))
    folded = "".join(char for char in folded if not unicodedata.combining(char))
    return folded if folded.isascii() else fallback


def _provider(pool: Pool) -> str:
    """Who provides the pool's GPUs: the cloud provider of a cloud pool, else gpufleet's
    owner (the installation itself)."""
    if pool.pk and not pool.is_owned and pool.provider:
        return ascii_text(pool.provider, DATA_GENERATOR)
    return DATA_GENERATOR


def _is_usage(row: FocusRow) -> bool:
    return row.kind != ADJUSTMENT


def _quantity(row: FocusRow):
    """GPU-hours to the millionth: usage rows only (an adjustment has none)."""
    if not _is_usage(row):
        return None
    return rounded(max(row.gpu_hours, 0.0), QUANTITY_PLACES)


def _unit_price(row: FocusRow):
    return row.unit_price if _is_usage(row) else None


def _list_cost(row: FocusRow):
    """The GPU-hours at the price in force: unit price × pricing quantity, exactly, as
    FOCUS requires of ListCost and ContractedCost. An adjustment's is its amount."""
    if not _is_usage(row):
        return row.billed
    if row.unit_price is None:
        return None
    return row.unit_price * _quantity(row)


def _missing_rate(row: FocusRow):
    """The exchange rate the row's price lacks, as "CNY 2026-11"; its cost leaves out what
    that rate would convert, as the cost report does."""
    if not _is_usage(row) or row.unit_price_usd is not None:
        return None
    return f"{row.pool.currency} {row.charge_start:%Y-%m}"


def _tags(row: FocusRow) -> str:
    tags = {f"{TAG_PREFIX}pool": row.pool.slug}
    if row.workload is not None:
        tags[f"{TAG_PREFIX}workload"] = row.workload.slug
    if row.team is not None:
        tags[f"{TAG_PREFIX}team"] = row.team.slug
    return json.dumps(tags, ensure_ascii=False, sort_keys=True)


def _description(row: FocusRow) -> str:
    """What the row charges, in ASCII from slugs (the names are in the x_ columns)."""
    if not _is_usage(row):
        return f"Adjustment to {row.adjusted_month} of pool {row.pool.slug}"
    whose = f"workload {row.workload.slug}" if row.workload else row.kind.replace("_", " ")
    return f"GPU-hours of pool {row.pool.slug}: {whose}"


def _text(value: str | None) -> str | None:
    """A blank text is FOCUS's null."""
    return value or None


def _column(header: str, value, cell_type=CellType.TEXT, places=None, data_type="String"):
    column = Column(header, value, cell_type, places)
    FOCUS_TYPES[header] = data_type
    return column


# Column name → FOCUS data type, for the metadata's column definitions.
FOCUS_TYPES: dict[str, str] = {}


def columns() -> list[Column]:
    """The dataset's columns: FOCUS's, in alphabetical order, then gpufleet's ``x_``."""
    money, decimal, moment = CellType.MONEY, CellType.DECIMAL, "Date/Time"
    return [
        _column("BilledCost", lambda row: row.billed, money, 2, "Decimal"),
        _column("BillingAccountId", lambda row: DATA_GENERATOR),
        _column("BillingAccountName", lambda row: DATA_GENERATOR),
        _column("BillingCurrency", lambda row: focus_billing_currency()),
        _column("BillingPeriodEnd", lambda row: timestamp(row.billing_end), data_type=moment),
        _column("BillingPeriodStart", lambda row: timestamp(row.billing_start), data_type=moment),
        _column("ChargeCategory", lambda row: "Usage" if _is_usage(row) else "Adjustment"),
        _column("ChargeClass", lambda row: None if _is_usage(row) else "Correction"),
        _column("ChargeDescription", _description),
        _column("ChargeFrequency", lambda row: "Usage-Based" if _is_usage(row) else "One-Time"),
        _column("ChargePeriodEnd", lambda row: timestamp(row.charge_end), data_type=moment),
        _column("ChargePeriodStart", lambda row: timestamp(row.charge_start), data_type=moment),
        # gpufleet has no commitment discounts: null, which FOCUS's usage rules read.
        _column("CommitmentDiscountStatus", lambda row: None),
        _column("ConsumedQuantity", _quantity, decimal, QUANTITY_PLACES, "Decimal"),
        _column("ConsumedUnit", lambda row: GPU_HOURS if _is_usage(row) else None),
        _column("ContractedCost", _list_cost, money, 2, "Decimal"),
        _column("ContractedUnitPrice", _unit_price, money, 4, "Decimal"),
        _column("EffectiveCost", lambda row: row.billed, money, 2, "Decimal"),
        # No invoice: the figures are computed, not invoiced.
        _column("InvoiceId", lambda row: None),
        _column("InvoiceIssuerName", lambda row: _provider(row.pool)),
        _column("ListCost", _list_cost, money, 2, "Decimal"),
        _column("ListUnitPrice", _unit_price, money, 4, "Decimal"),
        _column("PricingQuantity", _quantity, decimal, QUANTITY_PLACES, "Decimal"),
        _column("PricingUnit", lambda row: GPU_HOURS if _is_usage(row) else None),
        _column("ProviderName", lambda row: _provider(row.pool)),
        _column("PublisherName", lambda row: _provider(row.pool)),
        _column("RegionId", lambda row: ascii_text(row.pool.region)),
        _column("RegionName", lambda row: ascii_text(row.pool.region)),
        _column("ResourceId", lambda row: f"{DATA_GENERATOR}/pools/{row.pool.slug}"),
        _column("ResourceName", lambda row: ascii_text(row.pool.name, row.pool.slug)),
        _column("ResourceType", lambda row: "GPU pool"),
        _column("ServiceCategory", lambda row: SERVICE_CATEGORY),
        _column("ServiceName", lambda row: "GPU pools"),
        _column("ServiceSubcategory", lambda row: SERVICE_SUBCATEGORY),
        _column("SubAccountId", lambda row: row.team.slug if row.team else None),
        _column(
            "SubAccountName",
            lambda row: ascii_text(row.team.name, row.team.slug) if row.team else None,
        ),
        _column("Tags", _tags, data_type="JSON"),
        _column("x_PoolSlug", lambda row: row.pool.slug),
        _column("x_PoolName", lambda row: row.pool.name),
        # FOCUS has no cluster column: the pool's cluster, by slug and by name.
        _column("x_Cluster", lambda row: _text(cluster_slug_of(row.pool))),
        _column(
            "x_ClusterName", lambda row: row.pool.cluster.name if row.pool.cluster_id else None
        ),
        _column("x_Deployment", lambda row: _text(row.pool.deployment)),
        _column("x_AllocationKind", lambda row: row.kind),
        _column("x_Workload", lambda row: row.workload.slug if row.workload else None),
        _column("x_AllocationName", lambda row: row.label),
        _column("x_Team", lambda row: row.team.slug if row.team else None),
        _column("x_TeamName", lambda row: row.team.name if row.team else None),
        _column("x_SplitRule", lambda row: _text(row.split_rule)),
        _column("x_SplitRuleText", lambda row: _text(row.split_rule_text)),
        _column("x_ClosedMonth", lambda row: _text(row.closed_month)),
        _column("x_AdjustedMonth", lambda row: _text(row.adjusted_month)),
        _column("x_MissingExchangeRate", _missing_rate),
    ]


def _number(value):
    """A CSV number: a Decimal as it is (to its places), a float to six decimals."""
    return round(value, QUANTITY_PLACES) if isinstance(value, float) else value


def focus_csv(rows: list[FocusRow]) -> str:
    specs = columns()
    file = CsvFile(numbers=_number)
    file.table(specs, [values(specs, row) for row in rows])
    return file.text()


def metadata(*, created: datetime | None = None) -> dict:
    """FOCUS's metadata of the dataset: its data generator and its schema (FocusVersion,
    creation date, each column's name and data type)."""
    specs = columns()
    return {
        "DataGenerator": {"DataGenerator": DATA_GENERATOR},
        "Schemas": [
            {
                "SchemaId": f"{DATA_GENERATOR}-focus-{FOCUS_VERSION}",
                "FocusVersion": FOCUS_VERSION,
                "CreationDate": timestamp(created or timezone.now()),
                "ColumnDefinition": [
                    {
                        "ColumnName": str(column.header),
                        "DataType": FOCUS_TYPES[str(column.header)],
                        **(
                            {"ProviderTagPrefixes": [TAG_PREFIX]} if column.header == "Tags" else {}
                        ),
                    }
                    for column in specs
                ],
            }
        ],
    }


def filename(start: datetime, end: datetime) -> str:
    return f"gpufleet-focus-{FOCUS_VERSION}-{start:%Y-%m-%d}-{end:%Y-%m-%d}.csv"


def focus_response(rows: list[FocusRow], start: datetime, end: datetime) -> HttpResponse:
    response = HttpResponse(focus_csv(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename(start, end)}"'
    response["FOCUS-Version"] = FOCUS_VERSION
    return response


register("showback.focus", formats=FORMATS, tables=lambda: {"focus": columns()}, module=__name__)
