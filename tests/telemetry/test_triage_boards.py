"""Triage suggestions respect the board: the form factor and the memory a GPU's name
states or its samples report, against each pool's catalog model (memory_gb,
memory_type). Names and memory figures are those of the real captures in tests/data
(dcgm-exporter scrapes, nvidia-smi CSV), each noted with where it is read."""

import csv
import re
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.urls import reverse

from apps.catalog.models import GpuModel
from apps.telemetry.models import GpuDevice
from apps.telemetry.triage import gpu_model_matches, suggest_pool
from tests.factories import PoolFactory

CATALOG = Path(__file__).resolve().parents[2] / "apps" / "catalog" / "data" / "gpu_models.csv"


def _catalog():
    with CATALOG.open() as handle:
        return [
            (row["name"], row["memory_type"], row["memory_gb"]) for row in csv.DictReader(handle)
        ]


# What GPUs report of their memory (used + free, MiB) in tests/data, against the catalog's
# memory_gb: about equal for a whole GPU, at most for a vGPU or a MIG slice.
REPORTED_MEMORY = [
    # nvidia-smi, linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv: 19818 + 61263.
    ("NVIDIA H100 80GB HBM3", 81_081, True, ["H100 SXM"]),
    # dcgm-exporter, upcloud_L40S_driver595.prom: FB_USED 0 + FB_FREE 45459.
    ("NVIDIA L40S", 45_459, True, ["L40S"]),
    # The same name with half that memory is no L40S (an L4 reports 22563 free, kops_aws).
    ("NVIDIA L40S", 22_563, True, []),
    # dcgm-exporter, ericsson_T4_loaded_driver590_nohelp.prom: 5120 + 9791.
    ("Tesla T4", 14_911, True, ["T4"]),
    # dcgm-exporter, vks_vGPU_GRID-A100-40C_driver580.prom: 0 + 37739 (3220 reserved).
    ("GRID A100-40C", 37_739, True, ["A100 SXM 40GB", "A100 PCIe 40GB"]),
    # A MIG slice 1g.10gb of an A100 80 GB PCIe reports its slice's memory, not the board's.
    ("NVIDIA A100 80GB PCIe", 9_728, False, ["A100 PCIe 80GB"]),
]


@pytest.mark.parametrize(("reported", "memory_mib", "whole_gpu", "expected"), REPORTED_MEMORY)
def test_the_memory_a_gpu_reports_must_fit_its_catalog_model(
    reported, memory_mib, whole_gpu, expected
):
    matches = [
        name
        for name, memory_type, memory_gb in _catalog()
        if gpu_model_matches(
            reported,
            name,
            memory_type,
            catalog_memory_gb=memory_gb,
            reported_memory_mib=memory_mib,
            whole_gpu=whole_gpu,
        )
    ]
    assert matches == expected


def _pool(name, model_name, memory_type="", memory_gb=None):
    return SimpleNamespace(
        name=name,
        gpu_model=SimpleNamespace(name=model_name, memory_type=memory_type, memory_gb=memory_gb),
    )


def _gpu(hostname, model_name, memory_mib=None):
    return SimpleNamespace(
        pk=hostname, hostname=hostname, model_name=model_name, reported_memory_mib=memory_mib
    )


def test_suggestions_respect_form_factor_and_memory():
    """The catalog's H100 SXM (HBM3) and H100 PCIe (HBM2e), A100 boards of 80 and 40 GB:
    each GPU is offered the pools of its own board only."""
    sxm = _pool("H100 SXM pool", "H100 SXM", "HBM3", 80)
    pcie = _pool("H100 PCIe pool", "H100 PCIe", "HBM2e", 80)
    a100_80 = _pool("A100 80GB pool", "A100 SXM 80GB", "HBM2e", 80)
    a100_40 = _pool("A100 40GB pool", "A100 SXM 40GB", "HBM2", 40)
    pools = [sxm, pcie, a100_80, a100_40]

    def suggested(model_name, memory_mib=None):
        suggestion = suggest_pool(_gpu("gpu-1", model_name, memory_mib), rules=[], pools=pools)
        return suggestion.pool.name if suggestion and suggestion.pool else suggestion

    assert suggested("NVIDIA H100 80GB HBM3", 81_081) == "H100 SXM pool"
    assert suggested("NVIDIA H100 PCIe") == "H100 PCIe pool"
    assert suggested("GRID A100-40C", 37_739) == "A100 40GB pool"
    assert suggested("NVIDIA A100-SXM4-40GB") == "A100 40GB pool"
    assert suggested("GRID A100D-40C", 37_739) == "A100 80GB pool"
    # A rule that sends an SXM card to the PCIe pool says it reports another model.
    rule = SimpleNamespace(hostname_pattern="gpu-*", pool=pcie)
    by_rule = suggest_pool(_gpu("gpu-1", "NVIDIA H100 80GB HBM3"), rules=[rule], pools=pools)
    assert by_rule.pool is pcie
    assert by_rule.caution == "it reports NVIDIA H100 80GB HBM3; pool H100 PCIe pool has H100 PCIe"


DATA = Path(__file__).resolve().parents[1] / "data"
SCRAPED_AT = datetime(2026, 11, 29, 11, 59, 45, tzinfo=UTC)


def _import_real(path, source_format):
    """The real capture's GPUs, unassigned (no pool, no rule), as an import leaves them."""
    from apps.telemetry.ingest import storage
    from apps.telemetry.ingest.parsers import parse_dcgm, parse_nvidia_smi_csv

    text = path.read_text()
    if source_format == "dcgm":
        result = parse_dcgm(text, scraped_at=SCRAPED_AT, now=SCRAPED_AT)
    else:
        result = parse_nvidia_smi_csv(text, now=SCRAPED_AT)
    assert not result.errors, result.errors
    storage.import_gpu_samples(result, received_at=SCRAPED_AT)


@pytest.mark.django_db
def test_real_gpus_are_offered_only_the_pools_of_their_form_factor_and_memory(
    client, make_user, catalog
):
    """dcgm-exporter's H100 (8 GPUs), L40S and vGPU scrapes and nvidia-smi's H100 capture
    (tests/data), beside pools of the H100 SXM and the H100 PCIe, of A100 boards of 80 and
    40 GB and of the L40S: each GPU gets the one pool of its board."""
    scrapes = DATA / "dcgm-exporter" / "scrapes"
    _import_real(scrapes / "aicr_8xH100_k8s_podlabels_driver580_sampled.prom", "dcgm")
    _import_real(scrapes / "upcloud_L40S_driver595.prom", "dcgm")
    _import_real(scrapes / "vks_vGPU_GRID-A100-40C_driver580.prom", "dcgm")
    _import_real(
        DATA / "nvidia-smi/query_gpu_csv/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv",
        "nvidia-smi",
    )
    pools = {
        slug: PoolFactory(name=name, gpu_model=GpuModel.objects.get(slug=slug))
        for slug, name in (
            ("h100-sxm", "H100 SXM pool"),
            ("h100-pcie", "H100 PCIe pool"),
            ("a100-sxm-80gb", "A100 80GB pool"),
            ("a100-pcie-40gb", "A100 40GB pool"),
            ("l40s", "L40S pool"),
        )
    }
    devices = list(GpuDevice.objects.order_by("key"))
    reported = {device.model_name for device in devices}
    assert reported == {"NVIDIA H100 80GB HBM3", "NVIDIA L40S", "GRID A100-40C"}
    assert len(devices) == 11

    client.force_login(make_user("lead"))
    body = client.get(reverse("telemetry:device_unassigned")).content.decode()
    table = body.split('id="unassigned-devices"', 1)[1].split("</table>", 1)[0]
    cells = [
        " ".join(re.sub(r"<[^>]+>", " ", cell).split())
        for cell in re.findall(r"<td data-suggestion>(.*?)</td>", table, re.DOTALL)
    ]
    expected = {
        "NVIDIA H100 80GB HBM3": "H100 SXM pool same GPU model as pool H100 SXM pool (H100 SXM)",
        "NVIDIA L40S": "L40S pool same GPU model as pool L40S pool (L40S)",
        "GRID A100-40C": "A100 40GB pool same GPU model as pool A100 40GB pool (A100 PCIe 40GB)",
    }
    assert sorted(cells) == sorted(expected[device.model_name] for device in devices)

    client.post(
        reverse("telemetry:device_assign"),
        {"action": "suggested", "devices": [device.pk for device in devices]},
    )
    placed = {
        (device.model_name, device.pool.gpu_model.slug)
        for device in GpuDevice.objects.select_related("pool__gpu_model")
    }
    assert placed == {
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA L40S", "l40s"),
        ("GRID A100-40C", "a100-pcie-40gb"),
    }
    assert not pools["h100-pcie"].devices.exists() and not pools["a100-sxm-80gb"].devices.exists()
