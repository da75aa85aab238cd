"""Placement checks: does a workload sit where it should? (framework-free)

The rules come from the domain (../shared/docs/PRODUCT.md, drawn from the seeds):
training and inference want different pools; online inference next to training jitters;
multi-node training needs a fast interconnect; quantization must be validated; unpinned
driver/CUDA/framework versions make "it loads but answers differ".
"""

from dataclasses import dataclass

from apps.core.sentences import gettext_noop, sentence

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
                sentence(
                    gettext_noop("Does not fit: needs %(needed)s per GPU, the GPU has %(has)s."),
                    needed=_gb(facts.memory_needed_bytes),
                    has=_gb(facts.gpu_memory_bytes),
                ),
            )
        )
    if facts.workload_is_training and facts.pool_purpose == "inference":
        findings.append(
            Finding(
                WARNING,
                "training_in_inference_pool",
                sentence(
                    gettext_noop(
                        "Training in an inference pool: it takes capacity sized for the serving "
                        "peak and the pool's GPUs and interconnect were chosen for latency, not "
                        "for training."
                    )
                ),
            )
        )
    if not facts.workload_is_training and facts.pool_purpose == "training":
        findings.append(
            Finding(
                WARNING,
                "inference_in_training_pool",
                sentence(
                    gettext_noop(
                        "Inference in a training pool: serving traffic competes with long "
                        "training jobs for GPUs; move it to an inference pool."
                    )
                ),
            )
        )
    if facts.workload_is_online_inference and facts.pool_purpose == "mixed":
        findings.append(
            Finding(
                WARNING,
                "online_inference_in_mixed_pool",
                sentence(
                    gettext_noop(
                        "Online inference in a mixed pool: training jobs preempt it and its "
                        "latency jitters. Split the pool, or at least isolate these GPUs from "
                        "training."
                    )
                ),
            )
        )
    nodes = -(-facts.workload_gpus // facts.gpus_per_node)
    if facts.workload_is_training and nodes > 1 and facts.pool_interconnect == "pcie":
        findings.append(
            Finding(
                WARNING,
                "multi_node_training_on_pcie",
                sentence(
                    gettext_noop(
                        "Multi-node training (%(nodes)s nodes) on a PCIe-only pool: gradient "
                        "all-reduce crosses slow links; expect poor scaling. Use an NVLink + "
                        "InfiniBand pool."
                    ),
                    nodes=nodes,
                ),
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
                sentence(
                    gettext_noop(
                        "Quantized to %(precision)s without a recorded accuracy validation on "
                        "an evaluation set: quantization costs accuracy."
                    ),
                    precision=facts.weight_precision.upper(),
                ),
            )
        )
    if not facts.software_pinned:
        findings.append(
            Finding(
                WARNING,
                "software_not_pinned",
                sentence(
                    gettext_noop(
                        "Driver, CUDA and framework versions are not all pinned on the pool: "
                        "“it loads but the answers differ” after an upgrade."
                    )
                ),
            )
        )
    return findings


def _gb(value_bytes: int | None) -> str:
    return "?" if value_bytes is None else f"{value_bytes / 1e9:,.1f} GB"
