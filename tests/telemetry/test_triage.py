"""The unassigned-GPUs triage: a suggested pool per GPU with its reason, from hostname rules
and from the GPU model a pool holds; one click assigns the ticked GPUs to theirs, worked
out again on the server; a select-all box for the page. Every expectation below is checked
by hand against the rules and the catalog names (apps/catalog/data/gpu_models.csv)."""

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from apps.catalog.models import GpuModel
from apps.telemetry.models import GpuDevice, GpuSample, HostnameRule, ImportRun, PoolHourlyUsage
from apps.telemetry.triage import gpu_model_matches, suggest_pool
from tests.factories import PoolFactory

CATALOG = Path(__file__).resolve().parents[2] / "apps" / "catalog" / "data" / "gpu_models.csv"

# The names real GPUs report (tests/data/: dcgm-exporter's modelName, nvidia-smi's name,
# and the A100/H100 names NVIDIA's drivers use) → the catalog models they are.
REPORTED_NAMES = {
    "NVIDIA H100 80GB HBM3": ["H100 SXM"],  # HBM3: the SXM card; the PCIe one has HBM2e
    "NVIDIA H100 PCIe": ["H100 PCIe"],
    "NVIDIA H100 NVL": [],  # not in the catalog
    "NVIDIA H200": ["H200 SXM"],
    "NVIDIA A100 80GB PCIe": ["A100 PCIe 80GB"],
    "NVIDIA A100-SXM4-40GB": ["A100 SXM 40GB"],
    # vGPU profiles of an A100 (dcgm-exporter's scrape in tests/data): NVIDIA names the
    # profiles of the 80 GB boards "A100D-…" (A100D-80C the whole board), those of the
    # 40 GB boards "A100-…" (A100-40C the whole board); the form factor is not said.
    "GRID A100-40C": ["A100 SXM 40GB", "A100 PCIe 40GB"],
    "GRID A100D-40C": ["A100 SXM 80GB", "A100 PCIe 80GB"],
    "GRID A100D-1-10C": ["A100 SXM 80GB", "A100 PCIe 80GB"],  # MIG-backed, 1 slice
    "NVIDIA L40S": ["L40S"],  # not the L4
    "NVIDIA L4": ["L4"],  # not the L40S
    "NVIDIA A10": ["A10"],  # not the A100
    "Tesla T4": ["T4"],
    "NVIDIA GeForce RTX 2080 SUPER": [],
    "NVIDIA GeForce RTX 4090": ["RTX 4090"],
    "": [],
}


def _catalog():
    with CATALOG.open() as handle:
        return [
            (row["name"], row["memory_type"], row["memory_gb"]) for row in csv.DictReader(handle)
        ]


@pytest.mark.parametrize(("reported", "expected"), REPORTED_NAMES.items())
def test_reported_names_match_their_catalog_models(reported, expected):
    matches = [
        name
        for name, memory_type, memory_gb in _catalog()
        if gpu_model_matches(reported, name, memory_type, catalog_memory_gb=memory_gb)
    ]
    assert matches == expected


def _pool(name, model_name, memory_type=""):
    return SimpleNamespace(
        name=name, gpu_model=SimpleNamespace(name=model_name, memory_type=memory_type)
    )


def _gpu(hostname, model_name):
    return SimpleNamespace(pk=hostname, hostname=hostname, model_name=model_name)


def test_the_first_matching_rule_wins_then_the_one_pool_of_the_same_model():
    shanghai = _pool("Shanghai H100", "H100 SXM", "HBM3")
    inference = _pool("L40S inference", "L40S", "GDDR6")
    a100_a, a100_b = _pool("A100 a", "A100 SXM 40GB"), _pool("A100 b", "A100 PCIe 40GB")
    rules = [
        SimpleNamespace(hostname_pattern="gpu-sh-9*", pool=inference),  # priority 5
        SimpleNamespace(hostname_pattern="gpu-sh-*", pool=shanghai),  # priority 10
    ]
    pools = [shanghai, inference, a100_a, a100_b]

    by_rule = suggest_pool(_gpu("gpu-sh-01", "NVIDIA H100 80GB HBM3"), rules=rules, pools=pools)
    assert (by_rule.pool, by_rule.reason, by_rule.by_rule, by_rule.caution) == (
        shanghai,
        "matches hostname rule gpu-sh-*",
        True,
        "",
    )
    # gpu-sh-90 matches both rules: the one tried first wins, though its pool's model is
    # not the one the GPU reports, which is said.
    first = suggest_pool(_gpu("gpu-sh-90", "NVIDIA H100 80GB HBM3"), rules=rules, pools=pools)
    assert (first.pool, first.reason) == (inference, "matches hostname rule gpu-sh-9*")
    assert first.caution == "it reports NVIDIA H100 80GB HBM3; pool L40S inference has L40S"

    by_model = suggest_pool(_gpu("infer-7", "NVIDIA L40S"), rules=rules, pools=pools)
    assert (by_model.pool, by_model.reason, by_model.by_rule) == (
        inference,
        "same GPU model as pool L40S inference (L40S)",
        False,
    )
    several = suggest_pool(_gpu("vgpu-1", "GRID A100-40C"), rules=rules, pools=pools)
    assert several.pool is None and several.candidates == (a100_a, a100_b)
    assert several.reason == "2 pools have its GPU model (A100 a, A100 b): choose one"
    assert suggest_pool(_gpu("edge-1", "NVIDIA L4"), rules=rules, pools=pools) is None
    assert suggest_pool(_gpu("mystery", ""), rules=rules, pools=pools) is None
    # No hostname: rules cannot match, the model still can.
    nameless = suggest_pool(_gpu("", "NVIDIA L40S"), rules=rules, pools=pools)
    assert nameless.pool is inference


# The page and the one-click assignment


def _device(uuid, hostname, model_name, samples=0, pool=None, instant=None):
    instant = instant or (timezone.now() - timedelta(days=1)).replace(
        minute=0, second=0, microsecond=0
    )
    device = GpuDevice.objects.create(
        key=uuid,
        uuid=uuid,
        hostname=hostname,
        gpu_index=0,
        model_name=model_name,
        pool=pool,
        first_seen_at=instant,
        last_seen_at=instant,
    )
    GpuSample.objects.bulk_create(
        GpuSample(device=device, timestamp=instant + timedelta(minutes=index), utilization_pct=50)
        for index in range(samples)
    )
    return device


@pytest.fixture
def fleet(catalog):
    """Pools, rules and unassigned GPUs of the unit test above, in the database."""

    def model(slug):
        return GpuModel.objects.get(slug=slug)

    in_service = datetime(2022, 1, 1, tzinfo=UTC)
    pools = SimpleNamespace(
        shanghai=PoolFactory(
            name="Shanghai H100", gpu_model=model("h100-sxm"), in_service_from=in_service
        ),
        inference=PoolFactory(
            name="L40S inference", gpu_model=model("l40s"), in_service_from=in_service
        ),
        archived=PoolFactory(name="Old L4", gpu_model=model("l4"), archived_at=timezone.now()),
        a100_a=PoolFactory(name="A100 a", gpu_model=model("a100-sxm-40gb")),
        a100_b=PoolFactory(name="A100 b", gpu_model=model("a100-pcie-40gb")),
    )
    HostnameRule.objects.create(pool=pools.shanghai, hostname_pattern="gpu-sh-*", priority=10)
    HostnameRule.objects.create(pool=pools.inference, hostname_pattern="gpu-sh-9*", priority=5)
    # A rule of an archived pool suggests nothing.
    HostnameRule.objects.create(pool=pools.archived, hostname_pattern="edge-*", priority=1)
    devices = SimpleNamespace(
        sh01=_device("GPU-sh01", "gpu-sh-01", "NVIDIA H100 80GB HBM3", samples=2),
        sh90=_device("GPU-sh90", "gpu-sh-90", "NVIDIA H100 80GB HBM3", samples=1),
        infer=_device("GPU-infer", "infer-7", "NVIDIA L40S", samples=3),
        edge=_device("GPU-edge", "edge-1", "NVIDIA L4"),
        vgpu=_device("GPU-vgpu", "vgpu-1", "GRID A100-40C"),
        mystery=_device("GPU-mystery", "mystery", ""),
    )
    return SimpleNamespace(pools=pools, devices=devices)


def _suggestion_cells(body: str) -> dict[str, str]:
    """hostname → the text of its Suggested pool cell, tags dropped."""
    import re

    table = body.split('id="unassigned-devices"', 1)[1].split("</table>", 1)[0]
    cells = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.DOTALL)[1:]:
        hostname = re.search(r'<label for="device-\d+">([^<]*)</label>', row).group(1)
        cell = re.search(r"<td data-suggestion>(.*?)</td>", row, re.DOTALL).group(1)
        cells[hostname] = " ".join(re.sub(r"<[^>]+>", " ", cell).split())
    return cells


@pytest.mark.django_db
def test_the_triage_page_suggests_a_pool_per_gpu_and_says_why(client, make_user, fleet):
    client.force_login(make_user("lead"))
    body = client.get(reverse("telemetry:device_unassigned")).content.decode()
    assert _suggestion_cells(body) == {
        "edge-1": "—",
        "gpu-sh-01": "Shanghai H100 matches hostname rule gpu-sh-*",
        "gpu-sh-90": "L40S inference matches hostname rule gpu-sh-9* but it reports NVIDIA H100 "
        "80GB HBM3; pool L40S inference has L40S",
        "infer-7": "L40S inference same GPU model as pool L40S inference (L40S)",
        "mystery": "—",
        "vgpu-1": "2 pools have its GPU model (A100 a, A100 b): choose one",
    }
    # The select-all box (shown by the page's script), and the one-click button.
    assert 'id="select-all-devices" data-select-all="devices"' in body
    assert 'aria-label="Select every GPU on this page"' in body
    assert "js/select_all.js" in body
    assert 'name="action" value="suggested" formnovalidate' in body


@pytest.mark.django_db
def test_one_click_assigns_each_ticked_gpu_to_its_suggested_pool(client, make_user, fleet):
    client.force_login(make_user("lead"))
    devices, pools = fleet.devices, fleet.pools
    every_gpu = [device.pk for device in vars(devices).values()]
    response = client.post(
        reverse("telemetry:device_assign"),
        # A pool in the request is not used: suggestions are worked out on the server.
        {"action": "suggested", "devices": every_gpu, "pool": pools.archived.pk},
        follow=True,
    )
    body = response.content.decode()
    placed = {
        device.hostname: (device.pool.name if device.pool else None, device.assignment)
        for device in GpuDevice.objects.select_related("pool")
    }
    assert placed == {
        "gpu-sh-01": ("Shanghai H100", "rule"),
        "gpu-sh-90": ("L40S inference", "rule"),
        "infer-7": ("L40S inference", "manual"),
        "edge-1": (None, "unassigned"),
        "vgpu-1": (None, "unassigned"),
        "mystery": (None, "unassigned"),
    }
    # One sentence per pool, sorted by pool: what each move made count.
    assert "2 GPUs assigned to L40S inference; their 4 samples now count." in body
    assert "1 GPU assigned to Shanghai H100; their 2 samples now count." in body
    assert body.index("L40S inference; their 4") < body.index("Shanghai H100; their 2")
    assert (
        "3 GPUs without a suggested pool stay unassigned (edge-1 #0, mystery #0, vgpu-1 #0): "
        "choose a pool for them and press Assign."
    ) in body
    # Their samples count in the new pools' hours at once.
    assert PoolHourlyUsage.objects.get(pool=pools.shanghai).reporting_gpus == 1
    assert PoolHourlyUsage.objects.get(pool=pools.inference).reporting_gpus == 2
    # The page now shows only the three left.
    assert set(_suggestion_cells(body)) == {"edge-1", "vgpu-1", "mystery"}


@pytest.mark.django_db
def test_suggestions_leave_gpus_that_have_a_pool_alone(client, make_user, fleet):
    client.force_login(make_user("lead"))
    placed = _device("GPU-placed", "gpu-sh-02", "NVIDIA H100 80GB HBM3", pool=fleet.pools.a100_a)
    response = client.post(
        reverse("telemetry:device_assign"),
        {"action": "suggested", "devices": [placed.pk]},
        follow=True,
    )
    assert "1 GPU already in a pool was left there." in response.content.decode()
    placed.refresh_from_db()
    assert placed.pool == fleet.pools.a100_a
    nothing = client.post(reverse("telemetry:device_assign"), {"action": "suggested"}, follow=True)
    assert "Tick at least one GPU to assign." in nothing.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["ops", "procurement", "reader"])
def test_roles_that_cannot_assign_get_403_and_no_controls(client, make_user, fleet, role):
    user = make_user(role)
    assert not user.has_perm("telemetry.change_gpudevice")
    client.force_login(user)
    response = client.post(
        reverse("telemetry:device_assign"),
        {"action": "suggested", "devices": [fleet.devices.sh01.pk]},
    )
    assert response.status_code == 403
    assert not GpuDevice.objects.filter(pool__isnull=False).exists()
    body = client.get(reverse("telemetry:device_unassigned")).content.decode()
    # The suggestions are there to read; the boxes and buttons are not.
    assert "matches hostname rule gpu-sh-*" in body
    assert 'id="select-all-devices"' not in body and 'value="suggested"' not in body


# After a real upload without a pool

SCRAPE = Path(__file__).resolve().parents[1] / "data" / "dcgm-exporter" / "scrapes"
H100_NODE = SCRAPE / "aicr_8xH100_k8s_podlabels_driver580_sampled.prom"  # 8 × H100 80GB HBM3


@pytest.mark.django_db
def test_both_buttons_assign_gpus_of_an_upload_without_a_pool_and_roll_them_up(
    client, make_user, pool, eager_celery, django_capture_on_commit_callbacks, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    client.force_login(make_user("lead"))
    scraped_at = (timezone.now() - timedelta(hours=2)).replace(second=0, microsecond=0)
    hour = scraped_at.replace(minute=0)
    with django_capture_on_commit_callbacks(execute=True):
        uploaded = client.post(
            reverse("telemetry:import_create"),
            {
                "kind": "gpu",
                "format": "dcgm",
                "scraped_at": scraped_at.strftime("%Y-%m-%dT%H:%M:%S"),
                "time_zone": "UTC",
                "file": SimpleUploadedFile(H100_NODE.name, H100_NODE.read_bytes()),
            },
        )
    assert uploaded.status_code == 302
    run = ImportRun.objects.get()
    assert (run.status, run.rows_accepted) == (ImportRun.Status.SUCCEEDED, 8)
    assert "8 waiting for a pool on the unassigned-GPUs page" in run.message
    gpus = list(GpuDevice.objects.order_by("gpu_index", "key"))
    assert len(gpus) == 8 and all(gpu.pool_id is None for gpu in gpus)
    assert not PoolHourlyUsage.objects.exists()

    # "Assign": three ticked GPUs into the chosen pool.
    response = client.post(
        reverse("telemetry:device_assign"),
        {"devices": [gpu.pk for gpu in gpus[:3]], "pool": pool.pk},
        follow=True,
    )
    assert response.status_code == 200
    assert "3 GPUs assigned to Test H100 training; their 3 samples now count." in (
        response.content.decode()
    )
    assert set(GpuDevice.objects.filter(pool=pool).values_list("pk", "assignment")) == {
        (gpu.pk, "manual") for gpu in gpus[:3]
    }
    usage = PoolHourlyUsage.objects.get(pool=pool, hour=hour)
    assert usage.reporting_gpus == 3

    # "Assign to suggested pools": every GPU ticked; the five left go to the one pool of
    # their model, the three placed stay.
    response = client.post(
        reverse("telemetry:device_assign"),
        {"action": "suggested", "devices": [gpu.pk for gpu in gpus]},
        follow=True,
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "3 GPUs already in a pool were left there." in body
    assert "5 GPUs assigned to Test H100 training; their 5 samples now count." in body
    assert not GpuDevice.objects.filter(pool__isnull=True).exists()
    usage = PoolHourlyUsage.objects.get(pool=pool, hour=hour)
    assert usage.reporting_gpus == 8
    busy_pct = {
        sample.device_id: sample.utilization_pct
        for sample in GpuSample.objects.filter(timestamp=scraped_at)
    }
    assert usage.busy_gpu_hours == pytest.approx(sum(busy_pct.values()) / 100)
