"""Exports: made by a Celery task, stored, listed, downloadable again; the XLSX (openpyxl)
and the PDF (pypdf text) carry the same numbers as the page."""

import csv
import io
import re

import pytest
from django.urls import reverse
from openpyxl import load_workbook
from pypdf import PdfReader

from apps.procurement.models import ComparisonExport
from tests.waiting import wait_until


def _page_totals(client, scenario) -> dict[str, str]:
    page = client.get(reverse("procurement:scenario_detail", args=[scenario.slug])).content
    rows = re.findall(
        r'data-option="([^"]+)".*?data-col="total">([\d,]+) USD<', page.decode(), re.DOTALL
    )
    assert len(rows) == 2, rows
    return dict(rows)


def _export(client, scenario, export_format, capture):
    with capture(execute=True):
        response = client.post(
            reverse("procurement:export_create", args=[scenario.slug]), {"format": export_format}
        )
    assert response.status_code == 302
    export = ComparisonExport.objects.filter(format=export_format).latest("pk")
    assert response.url == export.get_absolute_url()
    export.refresh_from_db()
    assert export.status == "succeeded", export.message
    download = client.get(reverse("procurement:export_download", args=[export.pk]))
    assert download.status_code == 200
    assert export.filename in download["Content-Disposition"]
    return export, b"".join(download.streaming_content)


@pytest.mark.django_db
def test_xlsx_has_four_formatted_sheets_matching_the_page(
    procurement_client, scenario, media_root, eager_celery, django_capture_on_commit_callbacks
):
    totals = _page_totals(procurement_client, scenario)
    assert totals == {"Rent H100": "7,300", "Hybrid H100": "5,840"}
    _, content = _export(procurement_client, scenario, "xlsx", django_capture_on_commit_callbacks)
    workbook = load_workbook(io.BytesIO(content))
    assert workbook.sheetnames == [
        "Comparison",
        "Inputs & assumptions",
        "Prices used",
        "Demand curve",
    ]
    sheet = workbook["Comparison"]
    headers = [cell.value for cell in sheet[1]]
    total_column = headers.index("Total cost (USD)")
    assert "Cost per effective GPU-hour (USD/reference GPU-h)" in headers
    assert "Paid utilization (%)" in headers
    for row in sheet.iter_rows(min_row=2, max_row=3):
        name, total = row[0].value, row[total_column]
        assert f"{total.value:,.0f}" == totals[name]
        assert total.number_format == "#,##0"
    assert sheet["A1"].font.bold
    input_sheet = workbook["Inputs & assumptions"]
    inputs = {row[0]: row[1] for row in input_sheet.iter_rows(values_only=True)}
    assert inputs["Horizon (months)"] == 1  # numbers stored as numbers
    assert inputs["Peak demand (reference GPUs)"] == 10.0
    assert inputs["What-if inputs applied"] == "no: the scenario as saved"
    demand = list(workbook["Demand curve"].iter_rows(min_row=2, values_only=True))
    assert [row[1] for row in demand] == [2, 2, 6, 10]
    assert [row[3] for row in demand] == [2, 2, 6, 10]  # Hybrid H100: GPUs needed


@pytest.mark.django_db
def test_pdf_text_carries_the_page_numbers_and_the_assumptions(
    procurement_client, scenario, media_root, eager_celery, django_capture_on_commit_callbacks
):
    totals = _page_totals(procurement_client, scenario)
    _, content = _export(procurement_client, scenario, "pdf", django_capture_on_commit_callbacks)
    assert content.startswith(b"%PDF")
    text = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages)
    for total in totals.values():
        assert total in text
    assert "Hybrid H100 costs 5,840 USD over 1 months" in text.replace("\n", " ")
    assert "newsvendor" in text
    assert "Checkpoint storage is a typed monthly figure" in text


@pytest.mark.django_db
def test_csv_lists_every_option_with_units_in_the_header(
    procurement_client, scenario, media_root, eager_celery, django_capture_on_commit_callbacks
):
    _, content = _export(procurement_client, scenario, "csv", django_capture_on_commit_callbacks)
    rows = list(csv.reader(io.StringIO(content.decode("utf-8-sig"))))
    headers = rows[0]
    total = headers.index("Total cost (USD)")
    assert [(row[0], float(row[total])) for row in rows[1:3]] == [
        ("Rent H100", 7300.0),
        ("Hybrid H100", 5840.0),
    ]


@pytest.mark.django_db
def test_exports_are_listed_with_who_and_when(
    procurement_client, scenario, media_root, eager_celery, django_capture_on_commit_callbacks
):
    export, _ = _export(procurement_client, scenario, "csv", django_capture_on_commit_callbacks)
    page = procurement_client.get(
        reverse("procurement:scenario_detail", args=[scenario.slug])
    ).content.decode()
    assert "Procurement" in page  # the procurement user's first name
    assert reverse("procurement:export_download", args=[export.pk]) in page
    assert f"{export.created_at:%Y-%m-%d %H:%M}" in page


@pytest.mark.django_db
def test_a_failed_export_says_why_and_offers_no_download(procurement_client, scenario):
    export = ComparisonExport.objects.create(
        scenario=scenario, format="pdf", status="failed", progress_pct=100, message="boom"
    )
    page = procurement_client.get(export.get_absolute_url()).content.decode()
    assert 'id="export-error"' in page and "boom" in page
    download = reverse("procurement:export_download", args=[export.pk])
    assert procurement_client.get(download).status_code == 404


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_all_three_formats_through_a_real_worker(
    client, make_user, scenario, celery_worker_process
):
    """Through Redis to a real worker; the page polls the progress until each is ready."""
    client.force_login(make_user("procurement"))
    polling = {"HX-Request": "true", "HX-Target": "export-progress"}
    for export_format in ("csv", "xlsx", "pdf"):
        response = client.post(
            reverse("procurement:export_create", args=[scenario.slug]), {"format": export_format}
        )
        assert response.status_code == 302
        fragment = wait_until(
            lambda url=response.url: _finished_fragment(
                client.get(url, headers=polling).content.decode()
            ),
            timeout_seconds=60,
            what=f"the {export_format} export to finish",
            interval_seconds=0.2,
        )
        assert 'id="export-download"' in fragment, fragment[:500]
        export = ComparisonExport.objects.get(format=export_format)
        download = client.get(reverse("procurement:export_download", args=[export.pk]))
        content = b"".join(download.streaming_content)
        if export_format == "xlsx":
            sheet = load_workbook(io.BytesIO(content))["Comparison"]
            assert sheet.cell(row=2, column=1).value == "Rent H100"
        elif export_format == "pdf":
            text = PdfReader(io.BytesIO(content)).pages[0].extract_text()
            assert "7,300" in text and "5,840" in text
        else:
            assert b"Rent H100" in content
        export.file.delete(save=False)  # the worker wrote under the real MEDIA_ROOT


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["reader", "lead", "ops", "admin"])
def test_every_role_downloads_a_stored_export_again(client, make_user, scenario, media_root, role):
    from django.core.files.base import ContentFile

    export = ComparisonExport.objects.create(scenario=scenario, format="csv", status="succeeded")
    export.file.save("stored.csv", ContentFile(b"Option,Total cost (USD)\n"))
    client.force_login(make_user(role))
    download = client.get(reverse("procurement:export_download", args=[export.pk]))
    assert download.status_code == 200
    assert b"".join(download.streaming_content).startswith(b"Option")


def _finished_fragment(fragment):
    """The progress fragment once it no longer asks to be polled again, else None."""
    return fragment if "hx-trigger" not in fragment else None
