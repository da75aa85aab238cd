"""Read a SkyPilot-style VM price catalog (framework-free).

SkyPilot's catalogs (e.g. ``lambda/vms.csv``) have one row per instance type and region:
``InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,
SpotPrice``. ``Price`` is USD per instance-hour, so the price per GPU-hour is Price ÷
AcceleratorCount. ``GpuInfo`` is a Python literal (single quotes), not JSON, so it is read
with ``ast.literal_eval``. CPU-only rows (no accelerator) are skipped, not errors.

Its errors and match reasons are Sentences (apps/core/sentences.py): English text that
the page says again in its reader's language.
"""

import ast
import csv
import io
import re
from dataclasses import dataclass

from apps.core.sentences import Sentence, gettext_noop, sentence

REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")


class PriceCatalogError(ValueError):
    """The file cannot be read as a price catalog at all (the message, a Sentence, says
    why: read it with ``texts.translated(error)``, as ``str()`` keeps only its English)."""


@dataclass(frozen=True)
class PriceRow:
    line: int
    instance_type: str
    accelerator: str
    gpus_per_instance: float
    price_per_instance_hour_usd: float
    region: str
    gpu_memory_mib: int | None

    @property
    def price_per_gpu_hour_usd(self) -> float:
        return self.price_per_instance_hour_usd / self.gpus_per_instance

    @property
    def form_factor(self) -> str | None:
        """ "SXM" or "PCIe" when the instance type says so (gpu_8x_h100_sxm5)."""
        name = self.instance_type.lower()
        if "sxm" in name:
            return "SXM"
        if "pcie" in name:
            return "PCIe"
        return None

    @property
    def note(self) -> str:
        count = f"{self.gpus_per_instance:g}"
        return (
            f"SkyPilot catalog line {self.line}: {self.instance_type} in {self.region}, "
            f"${self.price_per_instance_hour_usd:,.2f}/h ÷ {count} GPUs"
        )


def _gpu_memory_mib(raw: str) -> int | None:
    if not raw.strip():
        return None
    try:
        info = ast.literal_eval(raw)
        return int(info["Gpus"][0]["MemoryInfo"]["SizeInMiB"])
    except (ValueError, SyntaxError, KeyError, IndexError, TypeError):
        return None


def parse_price_catalog(text: str) -> tuple[list[PriceRow], list[tuple[int, Sentence]]]:
    """Rows with a GPU and a price, and (line, reason) for each row that could not be
    read. Raises PriceCatalogError when a required column is missing."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    missing = [name for name in REQUIRED_COLUMNS if name not in (reader.fieldnames or [])]
    if missing:
        raise PriceCatalogError(
            sentence(
                gettext_noop(
                    "Not a SkyPilot price catalog: the header lacks %(missing)s "
                    "(expected %(expected)s)."
                ),
                missing=", ".join(missing),
                expected=", ".join(REQUIRED_COLUMNS),
            )
        )
    rows, errors = [], []
    for line, record in enumerate(reader, start=2):
        accelerator = (record.get("AcceleratorName") or "").strip()
        if not accelerator:
            continue
        try:
            count = float(record["AcceleratorCount"])
            price = float(record["Price"])
        except (TypeError, ValueError):
            errors.append(
                (
                    line,
                    sentence(
                        gettext_noop(
                            "AcceleratorCount %(count)s or Price %(price)s is not a number."
                        ),
                        count=repr(record.get("AcceleratorCount")),
                        price=repr(record.get("Price")),
                    ),
                )
            )
            continue
        if count <= 0 or price < 0:
            errors.append(
                (
                    line,
                    sentence(
                        gettext_noop("AcceleratorCount must be above 0 and Price not negative.")
                    ),
                )
            )
            continue
        rows.append(
            PriceRow(
                line=line,
                instance_type=(record.get("InstanceType") or "").strip(),
                accelerator=accelerator,
                gpus_per_instance=count,
                price_per_instance_hour_usd=price,
                region=(record.get("Region") or "").strip(),
                gpu_memory_mib=_gpu_memory_mib(record.get("GpuInfo") or ""),
            )
        )
    return rows, errors


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


@dataclass(frozen=True)
class CatalogGpu:
    slug: str
    name: str
    memory_gb: float


def match_gpu(row: PriceRow, catalog: list[CatalogGpu]) -> tuple[CatalogGpu | None, str]:
    """The catalog GPU a row prices, or None with the reason (unknown or ambiguous).

    "A100-80GB" names its memory; otherwise GpuInfo's MiB decides 40 vs 80 GB, and the
    instance type's "sxm"/"pcie" the form factor.
    """
    base = _normalise(row.accelerator.split("-")[0])
    candidates = [gpu for gpu in catalog if base and base in _normalise(gpu.name)]
    memory_gb = None
    named_memory = re.search(r"(\d+)\s*GB", row.accelerator, re.IGNORECASE)
    if named_memory:
        memory_gb = float(named_memory.group(1))
    elif row.gpu_memory_mib:
        memory_gb = round(row.gpu_memory_mib / 1024)
    if memory_gb and len(candidates) > 1:
        candidates = [gpu for gpu in candidates if abs(gpu.memory_gb - memory_gb) <= 2]
    if row.form_factor and len(candidates) > 1:
        form_factor = _normalise(row.form_factor)
        candidates = [gpu for gpu in candidates if form_factor in _normalise(gpu.name)]
    if len(candidates) == 1:
        return candidates[0], ""
    if not candidates:
        return None, sentence(
            gettext_noop("no catalog GPU matches %(accelerator)s"), accelerator=row.accelerator
        )
    return None, sentence(
        gettext_noop("%(accelerator)s (%(instance_type)s) could be %(names)s"),
        accelerator=row.accelerator,
        instance_type=row.instance_type,
        names=", ".join(gpu.name for gpu in candidates),
    )


# Region prefixes of cloud catalogs → gpufleet's compliance zones (apps/pools/models.py).
_ZONE_PREFIXES = (
    (("cn-", "china"), "mainland_china"),
    (("ap-east", "hongkong", "hong-kong"), "hong_kong"),
    (("us-",), "united_states"),
    (("eu-", "europe-"), "european_union"),
)


def compliance_zone_of(region: str) -> str:
    lowered = region.lower()
    for prefixes, zone in _ZONE_PREFIXES:
        if lowered.startswith(prefixes):
            return zone
    return "other"
