"""Placement rules (PRODUCT.md, drawn from the seeds): each check fires on its case only."""

from dataclasses import replace

import pytest

from apps.pools.placement import PlacementFacts, placement_findings

GOOD_TRAINING = PlacementFacts(
    workload_is_training=True,
    workload_is_online_inference=False,
    pool_purpose="training",
    pool_interconnect="nvlink_infiniband",
    workload_gpus=64,
    gpus_per_node=8,
    weight_precision=None,
    quantization_validated=False,
    software_pinned=True,
    fits=True,
)
GOOD_SERVING = PlacementFacts(
    workload_is_training=False,
    workload_is_online_inference=True,
    pool_purpose="inference",
    pool_interconnect="pcie",
    workload_gpus=8,
    gpus_per_node=8,
    weight_precision="bf16",
    quantization_validated=False,
    software_pinned=True,
    fits=True,
)


def codes(facts):
    return [finding.code for finding in placement_findings(facts)]


def test_well_placed_workloads_have_no_findings():
    assert codes(GOOD_TRAINING) == []
    assert codes(GOOD_SERVING) == []


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (
            replace(
                GOOD_TRAINING,
                fits=False,
                memory_needed_bytes=90 * 10**9,
                gpu_memory_bytes=80 * 10**9,
            ),
            ["does_not_fit"],
        ),
        (replace(GOOD_TRAINING, pool_purpose="inference"), ["training_in_inference_pool"]),
        (replace(GOOD_SERVING, pool_purpose="training"), ["inference_in_training_pool"]),
        (replace(GOOD_SERVING, pool_purpose="mixed"), ["online_inference_in_mixed_pool"]),
        (replace(GOOD_TRAINING, pool_interconnect="pcie"), ["multi_node_training_on_pcie"]),
        (replace(GOOD_SERVING, weight_precision="int4"), ["quantization_not_validated"]),
        (replace(GOOD_TRAINING, software_pinned=False), ["software_not_pinned"]),
    ],
)
def test_each_rule_fires_on_its_case(facts, expected):
    assert codes(facts) == expected


def test_single_node_training_on_pcie_is_fine_and_validated_quantization_is_fine():
    assert codes(replace(GOOD_TRAINING, pool_interconnect="pcie", workload_gpus=8)) == []
    assert codes(replace(GOOD_SERVING, weight_precision="int8", quantization_validated=True)) == []


def test_batch_inference_in_a_mixed_pool_is_not_flagged_for_latency():
    assert (
        codes(replace(GOOD_SERVING, workload_is_online_inference=False, pool_purpose="mixed")) == []
    )


def test_does_not_fit_message_gives_both_sizes_in_gb():
    facts = replace(
        GOOD_TRAINING,
        fits=False,
        memory_needed_bytes=85_400_000_000,
        gpu_memory_bytes=80_000_000_000,
    )
    [finding] = placement_findings(facts)
    assert finding.severity == "danger"
    assert "85.4 GB" in finding.message and "80.0 GB" in finding.message
