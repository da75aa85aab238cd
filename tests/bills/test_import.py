"""Importing FOCUS bills: exact totals against an independent sum of the file, the house
rules of a bill file (NULL texts, odd timestamps, any column order, FOCUS 1.3's header),
refusals that name their line and column, atomicity and idempotency, and the three entry
points (the page, the command, the API)."""

import csv
import gzip
import io
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count
from django.urls import reverse

from apps.bills import importer
from apps.bills.models import Bill, BillLine
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parent.parent / "data" / "focus"
SPEC_SLICE = DATA / "focus_spec_aws_savings_plan_all_upfront_100pct_head.csv"
HANDWRITTEN = DATA / "handwritten_focus13_nulls_odd_timestamps.csv"
# The FOCUS-Sample-Data project's generated samples, their first lines (tests/data/focus).
FOCUS_SAMPLE_12 = DATA / "focus_sample_focus12_head.csv"
FOCUS_SAMPLE_13 = DATA / "focus_sample_focus13_costandusage_head.csv"


def independent_totals(path: Path) -> dict[str, Decimal]:
    """Provider → BilledCost summed with csv.DictReader and Decimal, nothing else: the
    figure the importer's totals must equal."""
    totals: dict[str, Decimal] = {}
    with path.open(newline="", encoding="utf-8-sig") as handle:
        for record in csv.DictReader(handle):
            provider = record.get("ServiceProviderName") or record["ProviderName"]
            cost = record["BilledCost"]
            if cost in ("", "NULL"):
                continue
            totals[provider] = totals.get(provider, Decimal(0)) + Decimal(cost)
    return totals


def independent_line_counts(path: Path) -> dict[str, int]:
    """Provider → its number of data records, counted with csv.DictReader."""
    counts: dict[str, int] = {}
    with path.open(newline="", encoding="utf-8-sig") as handle:
        for record in csv.DictReader(handle):
            provider = record.get("ServiceProviderName") or record["ProviderName"]
            counts[provider] = counts.get(provider, 0) + 1
    return counts


def _import(path_or_bytes, name="bill.csv"):
    data = path_or_bytes.read_bytes() if isinstance(path_or_bytes, Path) else path_or_bytes
    return importer.import_bill(io.BytesIO(data), filename=name, source=Bill.Source.COMMAND)


def test_spec_slice_imports_with_its_exact_totals_per_provider():
    result = _import(SPEC_SLICE)
    bill = result.bill
    expected = independent_totals(SPEC_SLICE)
    assert {name: Decimal(total) for name, total in bill.by_provider.items()} == expected
    # At the file's precision (2 decimals), not the storage's 12.
    assert bill.by_provider == {"Amazon Web Services": "628004.40"}
    assert importer.display_total(bill, bill.billed_cost) == "628004.40"
    assert bill.rows == 6 and bill.focus_version == "1.0–1.2"
    assert bill.currencies == ["USD"]
    assert bill.charge_period_start == datetime(2026, 2, 1, tzinfo=UTC)
    # The purchase line's charge period runs a year.
    assert bill.charge_period_end == datetime(2027, 2, 1, tzinfo=UTC)
    effective = sum(BillLine.objects.filter(bill=bill).values_list("effective_cost", flat=True))
    assert effective == Decimal("71.69") * 5


@pytest.mark.parametrize(
    ("path", "version"), [(FOCUS_SAMPLE_12, "1.0–1.2"), (FOCUS_SAMPLE_13, "1.3")]
)
def test_focus_sample_data_totals_and_lines_per_provider(path, version):
    bill = _import(path, path.name).bill
    assert bill.focus_version == version
    assert {name: Decimal(total) for name, total in bill.by_provider.items()} == independent_totals(
        path
    )
    assert bill.billed_cost == sum(independent_totals(path).values())
    counts = independent_line_counts(path)
    assert bill.rows == sum(counts.values())
    stored = BillLine.objects.filter(bill=bill).values("provider").annotate(lines=Count("id"))
    assert {row["provider"]: row["lines"] for row in stored} == counts
    assert bill.currencies == ["USD"]


def test_handwritten_file_reads_nulls_odd_timestamps_shuffled_columns_and_13_header():
    bill = _import(HANDWRITTEN).bill
    assert bill.focus_version == "1.3"
    assert {name: Decimal(total) for name, total in bill.by_provider.items()} == independent_totals(
        HANDWRITTEN
    )
    # 1234.567891234567 + 0.000001 − 10.50: twelve decimal places kept exactly.
    assert bill.by_provider["Example Cloud"] == "1224.067892234567"
    lines = {line.line_number: line for line in BillLine.objects.filter(bill=bill)}
    assert lines[2].charge_period_start == datetime(2024, 9, 1, tzinfo=UTC)
    assert lines[2].billing_period_start == datetime(2024, 9, 1, tzinfo=UTC)
    assert lines[2].tags == {"team": "ml", "pool": "h100-east"}
    assert lines[2].contracted_cost is None  # NULL
    assert lines[3].effective_cost is None and lines[3].consumed_quantity is None
    assert lines[3].tags == {}
    assert lines[3].charge_period_end == datetime(2024, 9, 1, 2, tzinfo=UTC)
    assert lines[4].resource_id == "" and lines[4].sku_id == ""
    assert lines[5].charge_period_start == datetime(2024, 9, 15, 11, 30, tzinfo=UTC)
    assert lines[5].billing_currency == "EUR"
    assert sorted(bill.currencies) == ["EUR", "USD"]


def test_gzip_reads_as_the_same_bill():
    plain = SPEC_SLICE.read_bytes()
    result = _import(gzip.compress(plain), "bill.csv.gz")
    assert result.created and result.bill.rows == 6
    # The hash is of the text: the plain file is the same bill, nothing added.
    again = _import(plain)
    assert not again.created and again.bill.pk == result.bill.pk
    assert BillLine.objects.count() == 6


def test_the_same_file_twice_adds_nothing():
    first = _import(SPEC_SLICE)
    second = _import(SPEC_SLICE)
    assert first.created and not second.created
    assert Bill.objects.count() == 1 and BillLine.objects.count() == 6


def test_another_file_with_the_same_provider_period_is_refused_naming_the_bill():
    first = _import(SPEC_SLICE).bill
    changed = SPEC_SLICE.read_text().replace("628004.40,0.00", "628004.41,0.00", 1)
    with pytest.raises(importer.BillRefused) as refused:
        _import(changed.encode())
    assert f"#{first.pk}" in str(refused.value.message)
    assert "Amazon Web Services" in str(refused.value.message)
    assert Bill.objects.count() == 1 and BillLine.objects.count() == 6


HEADER = (
    "BilledCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,"
    "ChargePeriodEnd,ProviderName,Tags"
)
GOOD = "1.00,USD,2024-09-01T00:00Z,2024-10-01T00:00Z,2024-09-01T00:00Z,2024-09-01T01:00Z,P,"


def _refusal(text: str) -> importer.BillRefused:
    with pytest.raises(importer.BillRefused) as refused:
        _import(text.encode())
    assert Bill.objects.count() == 0 and BillLine.objects.count() == 0  # nothing written
    return refused.value


def test_missing_columns_are_named():
    refusal = _refusal("BilledCost,ChargePeriodStart\n1,2024-09-01T00:00Z\n")
    message = str(refusal.message)
    for column in ("BillingCurrency", "BillingPeriodStart", "ChargePeriodEnd", "ProviderName"):
        assert column in message


@pytest.mark.parametrize(
    ("bad_line", "column", "said"),
    [
        (GOOD.replace("1.00,", '"1,000.00",', 1), "BilledCost", "not a number"),
        (GOOD.replace("1.00,", "12.5 USD,", 1), "BilledCost", "not a number"),
        (GOOD.replace("1.00,", f"0.{'0' * 24}1,", 1), "BilledCost", "cannot be kept exactly"),
        (
            GOOD.replace("2024-09-01T00:00Z,2024-09-01T01", "2024-13-01T00:00Z,2024-09-01T01"),
            "ChargePeriodStart",
            "not a date-time",
        ),
        (
            GOOD.replace("2024-09-01T00:00Z,2024-10-01", "01/09/2024,2024-10-01"),
            "BillingPeriodStart",
            "not a date-time",
        ),
        (GOOD + '"{team: ml}"', "Tags", "not JSON"),
        (GOOD + '"[1, 2]"', "Tags", "JSON object"),
        (GOOD.replace(",P,", ",NULL,"), "ProviderName", "empty"),
    ],
)
def test_a_bad_line_is_refused_naming_its_line_and_column(bad_line, column, said):
    refusal = _refusal("\n".join([HEADER, GOOD, bad_line, GOOD]) + "\n")
    assert refusal.error_count == 1
    (error,) = refusal.errors
    assert error.line_number == 3 and error.column == column
    assert said in str(error.message) and "Line 3" in str(error.message)
    assert "line 3" in str(refusal.message)


def test_exponent_is_read_exactly():
    bill = _import("\n".join([HEADER, GOOD.replace("1.00,", "1E-5,", 1)]).encode()).bill
    assert BillLine.objects.get(bill=bill).billed_cost == Decimal("0.00001")
    assert bill.by_provider == {"P": "0.00001"}


def test_a_floats_shortest_text_is_read_exactly():
    # 14 and 20 decimal places, as exports written from binary floats have them.
    lines = [HEADER, GOOD.replace("1.00,", "227.28753400000005,", 1)]
    lines.append(GOOD.replace("1.00,", "0.00012345678901234567,", 1))
    bill = _import("\n".join(lines).encode()).bill
    stored = sorted(BillLine.objects.filter(bill=bill).values_list("billed_cost", flat=True))
    assert stored == [Decimal("0.00012345678901234567"), Decimal("227.28753400000005")]
    # 227.28753400000005000000 + 0.00012345678901234567, at the file's 20 places.
    assert bill.by_provider == {"P": "227.28765745678906234567"}


def test_every_refused_line_is_counted():
    bad = GOOD.replace("1.00,", "x,", 1)
    refusal = _refusal("\n".join([HEADER, bad, GOOD, bad, bad]) + "\n")
    assert [error.line_number for error in refusal.errors] == [2, 4, 5]


def test_command_imports_and_reports(tmp_path, capsys):
    call_command("import_bill", str(SPEC_SLICE))
    out = capsys.readouterr().out
    assert "Amazon Web Services: 628004.40" in out
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "\n" + GOOD.replace("1.00,", "x,", 1) + "\n")
    with pytest.raises(CommandError, match="Nothing was imported"):
        call_command("import_bill", str(bad))


def test_api_upload_list_and_detail(client):
    finance = UserFactory(role="finance")
    client.force_login(finance)
    with SPEC_SLICE.open("rb") as handle:
        response = client.post(reverse("api-bills"), {"file": handle})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["rows"] == 6
    assert body["billed_cost"] == "628004.40"
    assert body["by_provider"] == {"Amazon Web Services": "628004.40"}
    assert body["charge_period_start"].startswith("2026-02-01T00:00:00")
    with SPEC_SLICE.open("rb") as handle:
        again = client.post(reverse("api-bills"), {"file": handle})
    assert again.status_code == 200 and again.json()["created"] is False
    listed = client.get(reverse("api-bills")).json()
    assert [bill["id"] for bill in listed["results"]] == [body["id"]]
    detail = client.get(reverse("api-bill-detail", args=[body["id"]]))
    assert detail.json()["billed_cost"] == "628004.40"
    assert client.get(reverse("api-bill-detail", args=[body["id"] + 1])).status_code == 404


def test_api_refusal_is_a_400_with_the_lines(client):
    client.force_login(UserFactory(role="finance"))
    upload = io.BytesIO((HEADER + "\n" + GOOD.replace("1.00,", "x,", 1) + "\n").encode())
    upload.name = "bad.csv"
    response = client.post(reverse("api-bills"), {"file": upload})
    assert response.status_code == 400
    assert response.json()["errors"][0]["line"] == 2
    assert response.json()["errors"][0]["column"] == "BilledCost"


@pytest.mark.parametrize("role", ["reader", "lead", "ops", "procurement"])
def test_only_finance_and_superusers_read_and_import(client, role):
    client.force_login(UserFactory(role=role))
    assert client.get(reverse("api-bills")).status_code == 403
    with SPEC_SLICE.open("rb") as handle:
        assert client.post(reverse("api-bills"), {"file": handle}).status_code == 403
    assert client.get(reverse("bills:bill_list")).status_code == 403
    assert Bill.objects.count() == 0


def test_upload_page_imports_and_lists_refused_lines(client):
    client.force_login(UserFactory(role="admin"))
    with SPEC_SLICE.open("rb") as handle:
        response = client.post(reverse("bills:bill_upload"), {"file": handle})
    bill = Bill.objects.get()
    assert response.status_code == 302 and response.url == bill.get_absolute_url()
    page = client.get(bill.get_absolute_url() + "?sort=-cost").content.decode()
    assert "628004.40" in page and "Amazon Web Services" in page
    listing = client.get(reverse("bills:bill_list")).content.decode()
    assert "628004.40" in listing
    bad = io.BytesIO((HEADER + "\n" + GOOD.replace("1.00,", "x,", 1) + "\n").encode())
    bad.name = "bad.csv"
    refused = client.post(reverse("bills:bill_upload"), {"file": bad})
    assert refused.status_code == 422
    assert "Line 2, BilledCost" in refused.content.decode()


def test_deleting_a_bill_lets_its_corrected_file_in(client):
    first = _import(SPEC_SLICE).bill
    client.force_login(UserFactory(role="finance"))
    url = reverse("bills:bill_delete", args=[first.pk])
    assert client.get(url).status_code == 200  # the confirmation
    assert client.post(url).status_code == 302
    assert not BillLine.objects.exists()
    corrected = SPEC_SLICE.read_text().replace("628004.40,0.00", "628004.41,0.00", 1)
    bill = _import(corrected.encode()).bill
    assert bill.by_provider == {"Amazon Web Services": "628004.41"}
