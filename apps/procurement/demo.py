"""The demo procurement scenario: where should the Asia chat API run for the next three
years? Its demand is the measured curve of the ``chat-api-asia`` workload; it compares
on-demand, reserved, owned (faster H100s in Beijing) and hybrid. Idempotent: the caller
(``seed_demo``) passes the demo's scenario when it made one before; options are matched by
name inside it, saved only when something differs (no history noise)."""

from decimal import Decimal

from apps.catalog.models import GpuModel
from apps.pools.models import ComplianceZone
from apps.procurement.models import (
    DemandSource,
    HybridBaseline,
    LineType,
    OptionKind,
    OptionRegionRtt,
    Scenario,
    ScenarioOption,
    ThroughputBasis,
    UserRegion,
)

SCENARIO_SLUG = "chat-api-asia-serving"
SCENARIO_NAME = "Chat API · Asia: where to serve it"
# Lambda has no L40S in SkyPilot's catalog: a plausible regional on-demand price.
L40S_ON_DEMAND = Decimal("1.8500")
# gpu_1x_h100_pcie at $2.49/h in SkyPilot's Lambda catalog.
H100_PCIE_ON_DEMAND = Decimal("2.4900")
RUNNING = {"storage_per_month": Decimal("300"), "network_per_month": Decimal("800")}
# Illustrative region criteria, not measurements: enough for the page to show an option
# that meets everything, one short of a requirement and one that leaves a criterion out.
USER_REGIONS = {"Shanghai users": Decimal("60"), "Singapore users": Decimal("80")}
CRITERIA = {
    "Cloud on-demand · L40S · Hong Kong": (
        {"line_type": LineType.BGP, "ddos_protection_gbps": Decimal("20"), "ip_address_count": 4},
        {"Shanghai users": Decimal("38"), "Singapore users": Decimal("35")},
    ),
    "Cloud reserved · L40S · Hong Kong (1 year)": (
        {
            "line_type": LineType.CN2_GIA,
            "ddos_protection_gbps": Decimal("100"),
            "ip_address_count": 8,
        },
        {"Shanghai users": Decimal("32"), "Singapore users": Decimal("36")},
    ),
    "Owned · H100 PCIe · Beijing": (
        {"line_type": LineType.BGP, "ddos_protection_gbps": Decimal("200"), "ip_address_count": 16},
        {"Shanghai users": Decimal("28"), "Singapore users": Decimal("92")},
    ),
    "Hybrid · reserved L40S + on-demand burst": (
        {"line_type": "", "ddos_protection_gbps": Decimal("50"), "ip_address_count": 2},
        {"Shanghai users": Decimal("74")},
    ),
}


def _save_if_changed(instance, values):
    for name, value in values.items():
        setattr(instance, name, value)
    if instance.pk is None:
        instance.save()
        return instance
    stored = type(instance).objects.get(pk=instance.pk)
    if any(
        getattr(stored, field.attname) != getattr(instance, field.attname)
        for field in instance._meta.concrete_fields
        if field.name not in ("created_at", "updated_at")
    ):
        instance.save()
    return instance


def seed_procurement_demo(
    *, workload, l40s_pool, h100_pool, scenario=None, slug=SCENARIO_SLUG, name=SCENARIO_NAME
) -> Scenario | None:
    """Build the demo scenario (``slug`` and ``name`` as given) or refresh ``scenario``,
    the demo's earlier one, keeping its slug and name; from the demo's ``workload``
    (chat-api-asia) and its two pools. None when one of them or a GPU model is missing."""
    gpus = {gpu.slug: gpu for gpu in GpuModel.objects.filter(slug__in=["l40s", "h100-pcie"])}
    if workload is None or l40s_pool is None or h100_pool is None or len(gpus) < 2:
        return None
    scenario = scenario or Scenario(slug=slug, name=name)
    scenario = _save_if_changed(
        scenario,
        {
            "description": "Three years of the Asia chat API from its measured daily curve: "
            "rent, reserve, buy faster GPUs, or reserve a baseline and burst.",
            "horizon_months": 36,
            "currency": "USD",
            "usd_exchange_rate": Decimal("1"),
            "demand_source": DemandSource.MEASURED_WORKLOAD,
            "demand_workload": workload,
            "window_days": 14,
            # Until telemetry exists: 16 GPUs at about 45 % busy.
            "entered_gpu_hours_per_month": Decimal("5256.00"),
            "reference_gpu_model": gpus["l40s"],
            "reference_efficiency": Decimal("0.400"),
            "compute_precision": "fp8",
            "min_ddos_protection_gbps": Decimal("50.0"),
            "accepted_line_types": [LineType.BGP, LineType.CN2_GIA],
            "no_icp_filing": False,
            "min_ip_address_count": 2,
        },
    )
    regions = {}
    for name, max_rtt_ms in USER_REGIONS.items():
        regions[name], _created = UserRegion.objects.update_or_create(
            scenario=scenario, name=name, defaults={"max_rtt_ms": max_rtt_ms}
        )
    options = (
        {
            "name": "Cloud on-demand · L40S · Hong Kong",
            "kind": OptionKind.ON_DEMAND,
            "provider": "Regional cloud",
            "region": "ap-east-1 (Hong Kong)",
            "compliance_zone": ComplianceZone.HONG_KONG,
            "gpu_model": gpus["l40s"],
            "on_demand_price_per_gpu_hour": L40S_ON_DEMAND,
            "price_note": "Typed: regional list price.",
        },
        {
            "name": "Cloud reserved · L40S · Hong Kong (1 year)",
            "kind": OptionKind.RESERVED,
            "provider": "Regional cloud",
            "region": "ap-east-1 (Hong Kong)",
            "compliance_zone": ComplianceZone.HONG_KONG,
            "gpu_model": gpus["l40s"],
            "source_pool": l40s_pool,
            "on_demand_price_per_gpu_hour": L40S_ON_DEMAND,
            "price_note": "Reserved price and term from the pool.",
        },
        {
            "name": "Owned · H100 PCIe · Beijing",
            "kind": OptionKind.OWNED,
            "provider": "Own data centre",
            "region": "cn-beijing",
            "compliance_zone": ComplianceZone.MAINLAND_CHINA,
            "gpu_model": gpus["h100-pcie"],
            "source_pool": h100_pool,
            "on_demand_price_per_gpu_hour": H100_PCIE_ON_DEMAND,
            "throughput_basis": ThroughputBasis.DECODE_CEILING,
            "price_note": "Purchase, power and running costs from the pool.",
        },
        {
            "name": "Hybrid · reserved L40S + on-demand burst",
            "kind": OptionKind.HYBRID,
            "provider": "Regional cloud",
            "region": "ap-east-1 (Hong Kong)",
            "compliance_zone": ComplianceZone.HONG_KONG,
            "gpu_model": gpus["l40s"],
            "source_pool": l40s_pool,
            "on_demand_price_per_gpu_hour": L40S_ON_DEMAND,
            "hybrid_baseline": HybridBaseline.RESERVED,
            "price_note": "Baseline at the pool's reserved price; burst at the list price.",
        },
    )
    for position, values in enumerate(options, start=1):
        option = ScenarioOption.objects.filter(scenario=scenario, name=values["name"]).first()
        criteria, rtts = CRITERIA[values["name"]]
        option = _save_if_changed(
            option or ScenarioOption(scenario=scenario),
            {"position": position, **RUNNING, **values, **criteria},
        )
        for region_name, rtt_ms in rtts.items():
            OptionRegionRtt.objects.update_or_create(
                option=option, region=regions[region_name], defaults={"rtt_ms": rtt_ms}
            )
    return scenario
