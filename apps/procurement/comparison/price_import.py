"""SkyPilot's price catalog turned into on-demand options of a scenario."""

from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction
from django.db.models import Max
from django.utils.translation import gettext as _

from apps.catalog.models import GpuModel
from apps.procurement.comparison import skypilot
from apps.procurement.models import (
    OptionKind,
    Scenario,
    ScenarioOption,
)


@dataclass
class PriceImportSummary:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)


def import_prices(
    scenario: Scenario, catalog_rows, *, provider: str, region: str, gpu_models
) -> PriceImportSummary:
    """One on-demand option per chosen GPU model at its cheapest catalog price (in the
    region, when one is given), created or updated by name; prices converted from USD.
    ``catalog_rows`` is what ``skypilot.parse_price_catalog`` returned: (rows, errors)."""
    rows, errors = catalog_rows
    summary = PriceImportSummary(errors=errors)
    catalog = [
        skypilot.CatalogGpu(gpu.slug, gpu.name, float(gpu.memory_gb))
        for gpu in GpuModel.objects.all()
    ]
    wanted = {gpu.slug: gpu for gpu in gpu_models}
    cheapest: dict[str, skypilot.PriceRow] = {}
    for row in rows:
        if region and row.region != region:
            continue
        match, reason = skypilot.match_gpu(row, catalog)
        if match is None:
            if reason not in summary.skipped:
                summary.skipped.append(reason)
            continue
        if match.slug not in wanted:
            continue
        best = cheapest.get(match.slug)
        if best is None or row.price_per_gpu_hour_usd < best.price_per_gpu_hour_usd:
            cheapest[match.slug] = row
    rate = scenario.exchange_rate
    if rate is None:
        # Never 1 by default: the prices would be off by the rate.
        summary.errors.append(
            (
                0,
                _(
                    "No exchange rate for %(currency)s: type one on the scenario or add it "
                    "on the exchange rates page."
                )
                % {"currency": scenario.currency},
            )
        )
        return summary
    position = (scenario.options.aggregate(last=Max("position"))["last"] or 0) + 1
    names = {slug: f"{provider} on-demand · {wanted[slug].name}" for slug in cheapest}
    existing = {option.name: option for option in scenario.options.filter(name__in=names.values())}
    with transaction.atomic():
        for slug, row in sorted(cheapest.items()):
            gpu = wanted[slug]
            name = names[slug]
            price = (Decimal(str(row.price_per_gpu_hour_usd)) * rate).quantize(Decimal("0.0001"))
            option = existing.get(name)
            values = {
                "kind": OptionKind.ON_DEMAND,
                "provider": provider,
                "region": row.region,
                "compliance_zone": skypilot.compliance_zone_of(row.region),
                "gpu_model": gpu,
                "on_demand_price_per_gpu_hour": price,
                "price_note": row.note[:300],
            }
            if option is None:
                ScenarioOption.objects.create(
                    scenario=scenario, name=name, position=position, **values
                )
                position += 1
                summary.created.append(name)
            else:
                for attribute, value in values.items():
                    setattr(option, attribute, value)
                option.save()
                summary.updated.append(name)
    for slug, gpu in wanted.items():
        if slug not in cheapest:
            if region:
                reason = _("no price for %(gpu)s in %(region)s in the file") % {
                    "gpu": gpu.name,
                    "region": region,
                }
            else:
                reason = _("no price for %(gpu)s in the file") % {"gpu": gpu.name}
            summary.skipped.append(reason)
    return summary
