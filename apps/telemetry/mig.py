"""MIG slices as parts of one GPU (framework-free).

A100, H100 and H200 divide into 7 compute slices, A30 into 4 (NVIDIA Multi-Instance GPU
user guide, "Supported MIG profiles"). A GPU instance profile names how many it holds:
``1g.10gb`` holds 1, ``3g.40gb`` 3, ``7g.80gb`` all 7; suffixes such as ``+me`` (media
extensions) or ``-me`` do not change it, and a compute-instance prefix (``1c.3g.40gb``, a
compute instance inside a 3g GPU instance) is not the GPU instance's size.

dcgm-exporter publishes one line per GPU and one per slice (labels ``GPU_I_ID`` and
``GPU_I_PROFILE``). A slice's busy share of its GPU is its engine activity × its compute
share, N ÷ slices of the model; when slices report, the whole-GPU line is not added again.
"""

import re

# Slices of a GPU whose model has no compute-slice count in the catalog: the A100/H100
# figure, the one most MIG fleets run.
DEFAULT_MIG_COMPUTE_SLICES = 7

_GPU_INSTANCE_SLICES = re.compile(r"(?:^|\.)(\d+)g\.")


def compute_slices_of_profile(profile: str) -> int | None:
    """The compute slices a MIG GPU instance profile holds: "3g.40gb" → 3, "" → None."""
    match = _GPU_INSTANCE_SLICES.search(profile.strip().lower())
    if match is None:
        return None
    slices = int(match.group(1))
    return slices if slices > 0 else None
