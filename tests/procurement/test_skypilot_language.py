"""The SkyPilot price import says why it refused a file, which lines it could not read and
why a catalog row priced no GPU in the reader's language (apps/procurement/comparison/skypilot.py
writes them as Sentences); in English, exactly as before. The catalog is SkyPilot's real
Lambda file (tests/data/gpu-specs/), with one unreadable line added here."""

import re
from html import unescape
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation

from apps.catalog.models import GpuModel
from apps.core.texts import translated
from apps.procurement.comparison.skypilot import PriceCatalogError, parse_price_catalog

SKYPILOT_CSV = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "gpu-specs"
    / ("skypilot_catalog_v7_lambda_vms.csv")
)
CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}
# 324 lines (header included, CRLF ends): a row added at the end is line 325.
BAD_ROW = "gpu_1x_h100_sxm5,H100,1.0,26.0,225.0,abc,us-east-1,,\r\n"


def visible_text(response) -> str:
    body = response.content.decode()
    return unescape(re.sub(r"<[^>]+>", " ", body))


def test_the_refusal_and_an_unreadable_line_are_sentences():
    with pytest.raises(PriceCatalogError) as refused:
        parse_price_catalog("name,price\nfoo,1\n")
    # "price" is not "Price": the header has none of the five.
    english = (
        "Not a SkyPilot price catalog: the header lacks InstanceType, AcceleratorName, "
        "AcceleratorCount, Price, Region (expected InstanceType, AcceleratorName, "
        "AcceleratorCount, Price, Region)."
    )
    assert str(refused.value) == english == translated(refused.value)
    with translation.override("zh-hans"):
        assert translated(refused.value) == (
            "不是 SkyPilot 价格目录：表头缺少 InstanceType, AcceleratorName, AcceleratorCount, "
            "Price, Region（应有 InstanceType, AcceleratorName, AcceleratorCount, Price, "
            "Region）。"
        )
    text = SKYPILOT_CSV.read_text() + BAD_ROW
    assert text.count("\n") == 325
    _rows, errors = parse_price_catalog(text)
    assert [(line, str(reason)) for line, reason in errors] == [
        (325, "AcceleratorCount '1.0' or Price 'abc' is not a number.")
    ]
    with translation.override("zh-hans"):
        assert translated(errors[0][1]) == "AcceleratorCount '1.0' 或 Price 'abc' 不是数字。"


@pytest.mark.django_db
def test_the_import_page_says_its_reasons_in_chinese(procurement_client, scenario):
    h100 = GpuModel.objects.get(slug="h100-sxm")
    url = reverse("procurement:price_import", args=[scenario.slug])

    def post(headers):
        return procurement_client.post(
            url,
            {
                "file": SimpleUploadedFile(
                    "vms.csv", (SKYPILOT_CSV.read_text() + BAD_ROW).encode()
                ),
                "provider": "Lambda",
                "region": "us-east-1",
                "gpu_models": [h100.pk],
            },
            headers=headers,
        )

    chinese = visible_text(post(CHINESE))
    # gpu_1x_a100 declares 40,960 MiB in its GpuInfo and no form factor: the two 40 GB
    # A100s of the catalog fit it (listed by vendor and name, as the catalog is ordered).
    assert "A100（gpu_1x_a100）可能是 A100 PCIe 40GB, A100 SXM 40GB" in chinese
    assert "第 325 行：AcceleratorCount '1.0' 或 Price 'abc' 不是数字。" in chinese
    assert "could be" not in chinese and "is not a number" not in chinese
    english = visible_text(post({"Accept-Language": "en"}))
    assert "A100 (gpu_1x_a100) could be A100 PCIe 40GB, A100 SXM 40GB" in english
    assert "line 325: AcceleratorCount '1.0' or Price 'abc' is not a number." in english


@pytest.mark.django_db
def test_a_file_that_is_not_a_catalog_is_refused_in_chinese(procurement_client, scenario):
    response = procurement_client.post(
        reverse("procurement:price_import", args=[scenario.slug]),
        {
            "file": SimpleUploadedFile("x.csv", b"name,price\nfoo,1\n"),
            "provider": "Lambda",
            "gpu_models": [GpuModel.objects.get(slug="h100-sxm").pk],
        },
        headers=CHINESE,
    )
    text = visible_text(response)
    assert "不是 SkyPilot 价格目录：表头缺少 InstanceType" in text
    assert "Not a SkyPilot price catalog" not in text
