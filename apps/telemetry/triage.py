"""Which pool an unassigned GPU probably belongs to, and why.

Plain functions over objects with the attributes named below (GpuDevice, HostnameRule and
Pool in practice), no queries: the triage page loads the rules and pools once and
suggests a pool for every GPU on the page.

1. The first hostname rule (by priority) whose pattern matches the GPU's hostname: the
   rule that would have placed it had it existed when the GPU was first seen.
2. Else the one pool whose catalog GPU model is the model the GPU reports
   (``gpu_model_matches``: the chip, the form factor, the memory type, and the memory the
   name states or the samples report). Several such pools: no suggestion, they are named
   instead.
"""

import fnmatch
import re
from dataclasses import dataclass, field

from django.utils.translation import gettext

# Words in reported names that say who made or sold the card, not which GPU it is:
# "NVIDIA GeForce RTX 4090", "Tesla T4", "GRID A100-40C" (a vGPU profile of an A100).
_BRAND_WORDS = frozenset({"nvidia", "tesla", "geforce", "quadro", "grid", "amd", "instinct"})
# Form factors, under one name each: "A100-SXM4-80GB" and catalog "A100 SXM 80GB" agree.
_FORM_FACTORS = {"sxm": "sxm", "sxm2": "sxm", "sxm4": "sxm", "sxm5": "sxm"}
_FORM_FACTORS |= {"pcie": "pcie", "nvl": "nvl"}
_MEMORY = re.compile(r"^\d+gb$")
# "NVIDIA H100 80GB HBM3" names its memory type, which tells the SXM card (HBM3) from the
# PCIe one (HBM2e) where no form factor is named.
_MEMORY_TYPE = re.compile(r"^(?:hbm\d?e?|gddr\d+x?)$")
# A vGPU profile's size and series ("GRID A100-40C": 40 GB of frame buffer, C-series
# for compute; A, B and Q series too): the name of a slice of a board, not of a board.
_VGPU_PROFILE = re.compile(r"^\d+[abcq]$")
# The boards a vGPU profile of these chips runs on, by the name's chip word: NVIDIA names
# the A100 80 GB boards' profiles "A100D-…" (A100D-80C the whole board) and the 40 GB
# boards' "A100-…" (A100-40C the whole board), so the name says which memory.
_VGPU_BOARD_MEMORY = {"a100": "40gb", "a100d": "80gb"}
_VGPU_CHIP = {"a100d": "a100"}
# Total memory a whole GPU reports (used + free, as nvidia-smi and dcgm-exporter give
# them, in MiB) against its catalog size in GB: an 80 GB HBM card reports about 81,000
# MiB (85 × 10⁹ bytes, its "GB" are GiB, less what the driver reserves), a 48 GB GDDR
# card about 45,500 MiB (47.7 × 10⁹ bytes). Outside these bounds it is another board.
_WHOLE_GPU_MEMORY_RATIO = (0.85, 1.10)
MIB = 2**20


@dataclass(frozen=True)
class _ModelName:
    model_tokens: frozenset[str]
    form_factor: str
    memory: str
    memory_type: str = ""
    # A vGPU profile ("GRID A100-40C"): the reported memory is the slice's, not the board's.
    vgpu: bool = False


def _read_name(name: str) -> _ModelName:
    tokens = [token for token in re.split(r"[^a-z0-9]+", (name or "").lower()) if token]
    model_tokens, form_factor, memory, memory_type = set(), "", "", ""
    vgpu = any(_VGPU_PROFILE.match(token) for token in tokens)
    for token in tokens:
        if token in _BRAND_WORDS or (vgpu and _VGPU_PROFILE.match(token)):
            continue
        if vgpu and token in _VGPU_BOARD_MEMORY:
            memory = _VGPU_BOARD_MEMORY[token]
            model_tokens.add(_VGPU_CHIP.get(token, token))
        elif token in _FORM_FACTORS:
            form_factor = _FORM_FACTORS[token]
        elif _MEMORY.match(token):
            memory = token
        elif _MEMORY_TYPE.match(token):
            memory_type = token
        else:
            model_tokens.add(token)
    return _ModelName(frozenset(model_tokens), form_factor, memory, memory_type, vgpu)


def _memory_agrees(reported_memory_mib, catalog_memory_gb, *, whole_gpu: bool) -> bool:
    """Whether the memory a GPU reports can be the catalog model's: about its size for a
    whole GPU, at most its size for a slice (a MIG instance, a vGPU)."""
    if not reported_memory_mib or not catalog_memory_gb:
        return True
    ratio = reported_memory_mib * MIB / (float(catalog_memory_gb) * 1e9)
    low, high = _WHOLE_GPU_MEMORY_RATIO
    return ratio <= high and (not whole_gpu or ratio >= low)


def gpu_model_matches(
    reported_name: str,
    catalog_name: str,
    catalog_memory_type: str = "",
    *,
    catalog_memory_gb=None,
    reported_memory_mib: float | None = None,
    whole_gpu: bool = True,
) -> bool:
    """Whether a GPU reporting ``reported_name`` (nvidia-smi's ``name``, dcgm-exporter's
    ``modelName``) is of the catalog model ``catalog_name``.

    Every word of the catalog name that names the chip must be a word of the reported
    name ("L4" is not "L40S", "A10" not "A100"); the form factor (SXM, PCIe, NVL), the
    memory ("80GB", against the catalog name's and its ``memory_gb``; a vGPU profile's
    board, "A100-40C" a 40 GB A100, "A100D-40C" an 80 GB one) and the memory type (HBM3,
    against the catalog's ``memory_type``) must agree when the reported name states them,
    and count as agreeing when it does not ("NVIDIA H200" states neither). The memory the
    GPU reports (``reported_memory_mib``, used + free) must fit ``catalog_memory_gb``:
    about equal for a ``whole_gpu``, at most it for a MIG slice or a vGPU.
    """
    reported, catalog = _read_name(reported_name), _read_name(catalog_name)
    if not catalog.model_tokens or not catalog.model_tokens <= reported.model_tokens:
        return False
    if reported.form_factor and catalog.form_factor != reported.form_factor:
        return False
    if reported.memory and catalog.memory and catalog.memory != reported.memory:
        return False
    if (
        reported.memory
        and catalog_memory_gb
        and int(reported.memory.removesuffix("gb")) != round(float(catalog_memory_gb))
    ):
        return False
    catalog_type = (catalog_memory_type or "").lower()
    if reported.memory_type and catalog_type and catalog_type != reported.memory_type:
        return False
    return _memory_agrees(
        reported_memory_mib, catalog_memory_gb, whole_gpu=whole_gpu and not reported.vgpu
    )


@dataclass(frozen=True)
class Suggestion:
    """``pool`` (None when none can be suggested) and, in words, ``reason``; ``by_rule``
    when a hostname rule chose it; ``caution`` when something speaks against it."""

    pool: object | None
    reason: str
    by_rule: bool = False
    caution: str = ""
    # Several pools fit equally: they are named, none is chosen.
    candidates: tuple = field(default=())


def suggest_pool(device, *, rules, pools) -> Suggestion | None:
    """The suggestion for one GPU (``hostname``, ``model_name``, and when known
    ``reported_memory_mib`` and ``gpu_instance_id``, a MIG slice's), from ``rules`` in
    priority order (``hostname_pattern``, ``pool``) and the ``pools`` that may take it
    (``name``, ``gpu_model.name``, ``.memory_type`` and ``.memory_gb``); None when neither
    rules nor models say anything."""
    for rule in rules:
        if device.hostname and fnmatch.fnmatchcase(device.hostname, rule.hostname_pattern):
            gpu_model = rule.pool.gpu_model
            catalog_name = gpu_model.name
            caution = ""
            if device.model_name and not _same_model(device, gpu_model):
                caution = gettext("it reports %(reported)s; pool %(pool)s has %(model)s") % {
                    "reported": device.model_name,
                    "pool": rule.pool.name,
                    "model": catalog_name,
                }
            return Suggestion(
                rule.pool,
                gettext("matches hostname rule %(pattern)s") % {"pattern": rule.hostname_pattern},
                by_rule=True,
                caution=caution,
            )
    if not device.model_name:
        return None
    same_model = [pool for pool in pools if _same_model(device, pool.gpu_model)]
    if len(same_model) == 1:
        pool = same_model[0]
        return Suggestion(
            pool,
            gettext("same GPU model as pool %(pool)s (%(model)s)")
            % {"pool": pool.name, "model": pool.gpu_model.name},
        )
    if same_model:
        names = ", ".join(pool.name for pool in same_model)
        return Suggestion(
            None,
            gettext("%(count)s pools have its GPU model (%(names)s): choose one")
            % {"count": len(same_model), "names": names},
            candidates=tuple(same_model),
        )
    return None


def _same_model(device, gpu_model) -> bool:
    return gpu_model_matches(
        device.model_name,
        gpu_model.name,
        getattr(gpu_model, "memory_type", "") or "",
        catalog_memory_gb=getattr(gpu_model, "memory_gb", None),
        reported_memory_mib=getattr(device, "reported_memory_mib", None),
        whole_gpu=getattr(device, "gpu_instance_id", None) is None,
    )


def suggest_pools(devices, *, rules, pools) -> dict:
    """``suggest_pool`` for each device, by its ``pk``."""
    rules, pools = list(rules), list(pools)
    return {device.pk: suggest_pool(device, rules=rules, pools=pools) for device in devices}
