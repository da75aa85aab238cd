"""Placement checks: does a workload sit where it should? (framework-free)

The rules come from the domain (../shared/docs/PRODUCT.md, drawn from the seeds):
training and inference want different pools; online inference next to training jitters;
multi-node training needs a fast interconnect; quantization must be validated; unpinned
driver/CUDA/framework versions make "it loads but answers differ".
"""

from dataclasses import dataclass

DANGER, WARNING, INFO = "danger", "warning", "info"
QUANTIZED_PRECISIONS = frozenset({"fp8", "int8", "int4"})


@dataclass(frozen=True)
class Finding:
    severity: str  # danger | warning | info
    code: str
    message: str


@dataclass(frozen=True)
class PlacementFacts:
    workload_is_training: bool
    workload_is_online_inference: bool
    pool_purpose: str  # training | inference | mixed
    pool_interconnect: str  # nvlink_infiniband | nvlink | pcie
    workload_gpus: int
    gpus_per_node: int
    weight_precision: str | None  # inference only
    quantization_validated: bool
    software_pinned: bool
    fits: bool | None
    memory_needed_bytes: int | None = None
    gpu_memory_bytes: int | None = None


def placement_findings(facts: PlacementFacts) -> list[Finding]:
    findings = []
    if facts.fits is False:
        findings.append(
            Finding(
                DANGER,
                "does_not_fit",
                f"Does not fit: needs {_gb(facts.memory_needed_bytes)} per GPU, the GPU has "
                f"{_gb(facts.gpu_memory_bytes)}.",
            )
        )
    if facts.workload_is_training and facts.pool_purpose == "inference":
        findings.append(
            Finding(
                WARNING,
                "training_in_inference_pool",
                "Training in an inference pool: it takes capacity sized for the serving peak "
                "and the pool's GPUs and interconnect were chosen for latency, not for training.",
            )
        )
    if not facts.workload_is_training and facts.pool_purpose == "training":
        findings.append(
            Finding(
                WARNING,
                "inference_in_training_pool",
                "Inference in a training pool: serving traffic competes with long training "
                "jobs for GPUs; move it to an inference pool.",
            )
        )
    if facts.workload_is_online_inference and facts.pool_purpose == "mixed":
        findings.append(
            Finding(
                WARNING,
                "online_inference_in_mixed_pool",
                "Online inference in a mixed pool: training jobs preempt it and its latency "
                "jitters. Split the pool, or at least isolate these GPUs from training.",
            )
        )
    nodes = -(-facts.workload_gpus // facts.gpus_per_node)
    if facts.workload_is_training and nodes > 1 and facts.pool_interconnect == "pcie":
        findings.append(
            Finding(
                WARNING,
                "multi_node_training_on_pcie",
                f"Multi-node training ({nodes} nodes) on a PCIe-only pool: gradient "
                "all-reduce crosses slow links; expect poor scaling. Use an NVLink + "
                "InfiniBand pool.",
            )
        )
    if (
        not facts.workload_is_training
        and facts.weight_precision in QUANTIZED_PRECISIONS
        and not facts.quantization_validated
    ):
        findings.append(
            Finding(
                WARNING,
                "quantization_not_validated",
                f"Quantized to {facts.weight_precision.upper()} without a recorded accuracy "
                "validation on an evaluation set: quantization costs accuracy.",
            )
        )
    if not facts.software_pinned:
        findings.append(
            Finding(
                WARNING,
                "software_not_pinned",
                "Driver, CUDA and framework versions are not all pinned on the pool: "
                "“it loads but the answers differ” after an upgrade.",
            )
        )
    return findings


def _gb(value_bytes: int | None) -> str:
    return "?" if value_bytes is None else f"{value_bytes / 1e9:,.1f} GB"
