"""Memory-fit engine against the papers' worked examples and hand computations.

Every expected number is either printed in the cited paper or worked out by hand in the
test itself; none is produced by calling the code under test a second time. Byte figures
use 10^9 for "GB" (ZeRO, GPU vendors) and 2^30 for GiB, as each source does.
"""

import math

import pytest

from apps.pools.memory import (
    DEFAULT_INFERENCE_OVERHEAD,
    DEFAULT_TRAINING_OVERHEAD,
    GIB,
    InferenceSettings,
    MemoryBreakdown,
    ModelShape,
    Overhead,
    TrainingSettings,
    cost_per_million_tokens_usd,
    decode_tokens_per_second_ceiling,
    fits,
    headroom_bytes,
    inference_memory_per_gpu,
    kv_cache_bytes_per_token,
    max_concurrent_sequences,
    training_flops,
    training_memory_per_gpu,
    training_time_seconds,
)

GB = 10**9
NO_OVERHEAD = Overhead(fixed_bytes=0, fraction=0.0)

# Korthikanti et al. 2022 (arXiv 2205.05198), Table 3, the 22B model: a = 64 heads,
# h = 6144, L = 48 layers, trained with t = 8; s = 2048 as for all the paper's models.
# b = 1 micro-batch. Params (22·10^9) do not enter the activation formulas.
KORTHIKANTI_22B = ModelShape(params=22 * GB, layers=48, hidden_size=6144, attention_heads=64)

# Meta Llama 3 8B (config.json of meta-llama/Meta-Llama-3-8B): 32 layers, 32 query heads,
# 8 KV heads (grouped-query attention), head_dim 4096 / 32 = 128.
LLAMA_3_8B = ModelShape(
    params=8_030_261_248, layers=32, hidden_size=4096, attention_heads=32, kv_heads=8
)
# Meta Llama 3 70B: 80 layers, 64 heads, 8 KV heads, hidden 8192 (head_dim 128).
LLAMA_3_70B = ModelShape(
    params=70_553_706_496, layers=80, hidden_size=8192, attention_heads=64, kv_heads=8
)
# OPT-13B (Zhang et al. 2022; the vLLM paper's §3 example): hidden 5120, 40 layers,
# 40 heads, no grouped-query attention.
OPT_13B = ModelShape(params=13 * GB, layers=40, hidden_size=5120, attention_heads=40)
# Llama 2 7B (Touvron et al. 2023): 6,738,415,616 parameters, 32 layers, 32 heads, 4096.
LLAMA_2_7B = ModelShape(params=6_738_415_616, layers=32, hidden_size=4096, attention_heads=32)


def model_states(breakdown: MemoryBreakdown) -> int:
    return breakdown.weights + breakdown.gradients + breakdown.optimizer_states


# --- Model states: ZeRO (Rajbhandari et al. 2019, arXiv 1910.02054) ---------------------


@pytest.mark.parametrize(
    ("zero_stage", "expected_bytes", "paper_gb"),
    [
        # No ZeRO: (2 + 2 + 12)·Ψ = 16 · 7.5e9 = 120e9.
        (0, 120_000_000_000, 120.0),
        # ZeRO-1: 2Ψ + 2Ψ + 12Ψ/64 = 15e9 + 15e9 + 90e9/64 (= 1,406,250,000) = 31,406,250,000.
        (1, 31_406_250_000, 31.4),
        # ZeRO-2: 2Ψ + (2 + 12)Ψ/64 = 15e9 + 105e9/64 (= 1,640,625,000) = 16,640,625,000.
        (2, 16_640_625_000, 16.6),
        # ZeRO-3: 16Ψ/64 = 120e9/64 = 1,875,000,000 (the paper prints 1.9 GB).
        (3, 1_875_000_000, 1.9),
    ],
)
def test_zero_paper_figure_1_worked_example(zero_stage, expected_bytes, paper_gb):
    """ZeRO §3.1 / Figure 1: Ψ = 7.5B, N_d = 64, K = 12 (mixed-precision Adam)."""
    settings = TrainingSettings(
        precision="fp16", optimizer="adamw", zero_stage=zero_stage, data_parallel=64
    )
    breakdown = training_memory_per_gpu(ModelShape(params=7_500_000_000), settings)

    assert model_states(breakdown) == expected_bytes
    assert round(model_states(breakdown) / GB, 1) == paper_gb


def test_zero_paper_gpt2_needs_24_gb_of_model_states():
    """ZeRO §3.1: a 1.5B-parameter GPT-2 needs at least 16Ψ = 24 GB for model states
    with mixed-precision Adam."""
    breakdown = training_memory_per_gpu(ModelShape(params=1_500_000_000), TrainingSettings())

    assert breakdown.weights == 3 * GB  # 2 bytes × 1.5e9
    assert breakdown.gradients == 3 * GB  # 2 bytes × 1.5e9
    assert breakdown.optimizer_states == 18 * GB  # 12 bytes × 1.5e9
    assert model_states(breakdown) == 24 * GB


@pytest.mark.parametrize(
    ("precision", "optimizer", "weights", "gradients", "optimizer_states"),
    [
        # ZeRO §3.1: fp32 master 4 + momentum 4 + variance 4 = 12 bytes per parameter.
        ("bf16", "adamw", 2_000, 2_000, 12_000),
        # Transformer Math 101: 8-bit Adam keeps the fp32 master (4) + two 1-byte states.
        ("bf16", "adamw_8bit", 2_000, 2_000, 6_000),
        # Transformer Math 101: SGD with momentum = fp32 master 4 + momentum 4.
        ("fp16", "sgd_momentum", 2_000, 2_000, 8_000),
        # FP8 is counted like bf16: 16-bit weights/gradients and an fp32 master copy.
        ("fp8", "adamw", 2_000, 2_000, 12_000),
        # Pure fp32 (FORMULAS.md): 4Ψ weights, 4Ψ gradients, Adam momentum + variance 8Ψ.
        ("fp32", "adamw", 4_000, 4_000, 8_000),
        ("tf32", "adamw_8bit", 4_000, 4_000, 2_000),  # two 1-byte states, no master copy
        ("fp32", "sgd_momentum", 4_000, 4_000, 4_000),  # momentum only
    ],
)
def test_bytes_per_parameter_by_precision_and_optimizer(
    precision, optimizer, weights, gradients, optimizer_states
):
    """Hand computation with Ψ = 1,000 so each line reads as bytes per parameter × 1,000."""
    breakdown = training_memory_per_gpu(
        ModelShape(params=1_000),
        TrainingSettings(precision=precision, optimizer=optimizer),
        NO_OVERHEAD,
    )

    assert (breakdown.weights, breakdown.gradients, breakdown.optimizer_states) == (
        weights,
        gradients,
        optimizer_states,
    )


def test_tensor_and_pipeline_divide_model_states_before_zero():
    """FORMULAS.md: t·p divides model states, then ZeRO divides over N_d.

    Hand: Ψ = 8·10^9, t = 2, p = 4 → Ψ/8 = 10^9 per GPU. ZeRO-2 over N_d = 4:
    weights 2 × 10^9 = 2e9; gradients 2 × 10^9 / 4 = 0.5e9; AdamW 12 × 10^9 / 4 = 3e9.
    """
    settings = TrainingSettings(
        zero_stage=2, data_parallel=4, tensor_parallel=2, pipeline_parallel=4
    )
    breakdown = training_memory_per_gpu(ModelShape(params=8 * GB), settings, NO_OVERHEAD)

    assert breakdown.weights == 2 * GB
    assert breakdown.gradients == 500_000_000
    assert breakdown.optimizer_states == 3 * GB


def test_model_state_division_rounds_up():
    """Ψ = 1,001, N_d = 2, ZeRO-3: weights 2,002 / 2 = 1,001; gradients likewise; AdamW
    12,012 / 2 = 6,006. With N_d = 4: 2,002 / 4 = 500.5 → 501 (rounded up, never down)."""
    shape = ModelShape(params=1_001)
    halves = training_memory_per_gpu(
        shape, TrainingSettings(zero_stage=3, data_parallel=2), NO_OVERHEAD
    )
    quarters = training_memory_per_gpu(
        shape, TrainingSettings(zero_stage=3, data_parallel=4), NO_OVERHEAD
    )

    assert (halves.weights, halves.gradients, halves.optimizer_states) == (1_001, 1_001, 6_006)
    assert (quarters.weights, quarters.gradients, quarters.optimizer_states) == (501, 501, 3_003)


# --- Activations: Korthikanti et al. 2022 (arXiv 2205.05198) ---------------------------
# Hand computation for the 22B model (a = 64, h = 6144, L = 48, s = 2048, b = 1, t = 8):
#   s·b·h        = 2048 · 1 · 6144           = 12,582,912
#   5·a·s/h      = 5 · 64 · 2048 / 6144      = 106.67 (so s·b·h·5as/h = 5·a·s²·b)
#   5·a·s²·b     = 5 · 64 · 2048² · 1        = 1,342,177,280
# Per layer:
#   no parallelism, no recompute: 34·sbh + 5as²b = 427,819,008 + 1,342,177,280
#                                                = 1,769,996,288
#   TP t = 8: sbh·(10 + 24/8) + 5as²b/8 = 13 · 12,582,912 + 167,772,160 = 331,350,016
#   TP + SP: (34·sbh + 5as²b)/8 = 1,769,996,288 / 8 = 221,249,536
#   TP + selective: 13·sbh = 163,577,856
#   TP + SP + selective: 34·sbh/8 = 53,477,376
#   full recompute: 2·sbh = 25,165,824
# Times L = 48 layers (p = 1):
KORTHIKANTI_22B_EXPECTED_BYTES = {
    (1, False, "none"): 1_769_996_288 * 48,  # = 84,959,821,824
    (8, False, "none"): 331_350_016 * 48,  # = 15,904,800,768
    (8, True, "none"): 221_249_536 * 48,  # = 10,619,977,728
    (8, False, "selective"): 163_577_856 * 48,  # = 7,851,737,088
    (8, True, "selective"): 53_477_376 * 48,  # = 2,566,914,048
    (8, True, "full"): 25_165_824 * 48,  # = 1,207,959,552
    (1, False, "full"): 25_165_824 * 48,
}


@pytest.mark.parametrize(
    ("tensor_parallel", "sequence_parallel", "recompute"), list(KORTHIKANTI_22B_EXPECTED_BYTES)
)
def test_korthikanti_activation_formula_branches(tensor_parallel, sequence_parallel, recompute):
    """Korthikanti et al. 2022, Table 2 formulas on the Table 3 22B configuration."""
    settings = TrainingSettings(
        tensor_parallel=tensor_parallel,
        sequence_parallel=sequence_parallel,
        recompute=recompute,
        micro_batch_size=1,
        seq_len=2048,
    )
    breakdown = training_memory_per_gpu(KORTHIKANTI_22B, settings)

    assert (
        breakdown.activations
        == KORTHIKANTI_22B_EXPECTED_BYTES[(tensor_parallel, sequence_parallel, recompute)]
    )


def test_korthikanti_ratios_for_the_22b_model():
    """Korthikanti et al. 2022: sequence parallel + selective recompute keeps sbh·34/t per
    layer against sbh·(34 + 5as/h) without parallelism or recompute, and full recompute
    keeps 2sbh. The ratios only depend on a, s, h, t; hand:
    34 / (8 · (34 + 106.67)) = 34 / 1125.33 = 0.0302, and 2 / (34 + 106.67) = 0.0142."""

    def activations(**overrides):
        return training_memory_per_gpu(
            KORTHIKANTI_22B, TrainingSettings(seq_len=2048, **overrides)
        ).activations

    baseline = activations()
    sequence_parallel_selective = activations(
        tensor_parallel=8, sequence_parallel=True, recompute="selective"
    )
    full = activations(recompute="full")

    five_as_over_h = 5 * 64 * 2048 / 6144
    assert sequence_parallel_selective / baseline == pytest.approx(34 / (8 * (34 + five_as_over_h)))
    assert sequence_parallel_selective / baseline == pytest.approx(0.0302, abs=1e-4)
    assert full / baseline == pytest.approx(2 / (34 + five_as_over_h))
    assert full / baseline == pytest.approx(0.0142, abs=1e-4)


def test_gpt3_attention_term_exceeds_the_rest_of_the_layer():
    """Korthikanti et al. 2022 motivate selective recompute with GPT-3 175B (a = 96,
    s = 2048, h = 12288): 5as/h = 5·96·2048/12288 = 80 > 34, so the attention scores are
    most of a layer's activations. Hand, t = 8, per layer (b = 1):
    sbh = 2048 · 12288 = 25,165,824; TP only: sbh·(13 + 80/8) = 23·sbh = 578,813,952;
    selective: 13·sbh = 327,155,712 → selective keeps 13/23 of the memory."""
    gpt3_layer = ModelShape(params=175 * GB, layers=1, hidden_size=12288, attention_heads=96)
    tp_only = training_memory_per_gpu(gpt3_layer, TrainingSettings(tensor_parallel=8))
    selective = training_memory_per_gpu(
        gpt3_layer, TrainingSettings(tensor_parallel=8, recompute="selective")
    )

    assert tp_only.activations == 578_813_952
    assert selective.activations == 327_155_712


def test_pipeline_stage_holds_ceil_of_layers_over_stages():
    """FORMULAS.md: activations × layers per pipeline stage. 48 layers on 5 stages →
    ceil(9.6) = 10 layers; full recompute 2·sbh = 25,165,824 per layer → 251,658,240."""
    breakdown = training_memory_per_gpu(
        KORTHIKANTI_22B, TrainingSettings(pipeline_parallel=5, recompute="full")
    )

    assert breakdown.activations == 251_658_240
    assert any("pipeline stage" in note for note in breakdown.notes)


def test_fp32_doubles_activations_and_fp8_keeps_the_16_bit_figure():
    """Korthikanti's figures are for 2-byte activations: fp32/tf32 store 4 bytes (× 2);
    fp8 keeps the 16-bit figure. Hand: full recompute, 48 layers: 1,207,959,552 × 2."""

    def activations(precision):
        return training_memory_per_gpu(
            KORTHIKANTI_22B, TrainingSettings(precision=precision, recompute="full")
        ).activations

    assert activations("bf16") == 1_207_959_552
    assert activations("fp8") == 1_207_959_552
    assert activations("fp32") == 2_415_919_104
    assert activations("tf32") == 2_415_919_104


def test_training_with_params_only_counts_model_states_and_says_so():
    breakdown = training_memory_per_gpu(ModelShape(params=1_000), TrainingSettings())

    assert breakdown.activations is None
    assert breakdown.notes == (
        "Activations need layers, hidden size and attention heads; only model states are counted.",
    )
    # total treats the missing line as 0: 16,000 model-state bytes + overhead.
    assert breakdown.total == 16_000 + breakdown.overhead
    assert breakdown.as_dict()["activations"] is None


# --- Overhead line ----------------------------------------------------------------------


def test_overhead_is_fixed_plus_a_rounded_up_fraction_of_the_other_lines():
    """Overhead = fixed + ceil(fraction × other lines). Hand, params-only fp16 inference:
    Ψ = 1,000 → weights 2,000; 100 + ceil(0.05 · 2,000) = 200; total 2,200.
    Ψ = 1,001 → weights 2,002; 100 + ceil(100.1) = 201; total 2,203."""
    overhead = Overhead(fixed_bytes=100, fraction=0.05)
    settings = InferenceSettings(weight_precision="fp16")

    even = inference_memory_per_gpu(ModelShape(params=1_000), settings, overhead)
    odd = inference_memory_per_gpu(ModelShape(params=1_001), settings, overhead)

    assert (even.weights, even.overhead, even.total) == (2_000, 200, 2_200)
    assert (odd.weights, odd.overhead, odd.total) == (2_002, 201, 2_203)
    assert even.as_dict() == {
        "weights": 2_000,
        "gradients": 0,
        "optimizer_states": 0,
        "activations": 0,
        "kv_cache": 0,
        "overhead": 200,
        "total": 2_200,
    }


def test_default_overheads_are_their_own_configurable_lines():
    """FORMULAS.md: overhead is its own line. Training: 2 GiB + 10 %; inference:
    2 GiB + 5 % (the reasons are in memory.py). Hand: Ψ = 10^9 bf16 AdamW model states
    16e9 → 2,147,483,648 + 1.6e9 = 3,747,483,648."""
    assert (DEFAULT_TRAINING_OVERHEAD.fixed_bytes, DEFAULT_TRAINING_OVERHEAD.fraction) == (
        2 * GIB,
        0.10,
    )
    assert (DEFAULT_INFERENCE_OVERHEAD.fixed_bytes, DEFAULT_INFERENCE_OVERHEAD.fraction) == (
        2 * GIB,
        0.05,
    )

    breakdown = training_memory_per_gpu(ModelShape(params=GB), TrainingSettings())
    assert breakdown.overhead == 3_747_483_648


# --- Inference: weights and KV cache (Kwon et al. 2023, vLLM, §3) -----------------------


def test_vllm_paper_opt_13b_kv_cache():
    """vLLM §3: OPT-13B's KV cache for one token is 2 (key, value) × 5120 (hidden) × 40
    (layers) × 2 (FP16 bytes) = 819,200 bytes = 800 KiB (the paper's "800 KB"), and a
    2048-token request needs 819,200 × 2048 = 1,677,721,600 bytes = 1,600 MiB (the
    paper's "up to 1.6 GB")."""
    assert kv_cache_bytes_per_token(OPT_13B, "fp16") == 819_200 == 800 * 1024

    breakdown = inference_memory_per_gpu(
        OPT_13B,
        InferenceSettings(weight_precision="fp16", kv_cache_precision="fp16", context_length=2048),
    )
    assert breakdown.kv_cache == 1_677_721_600 == 1_600 * 2**20
    assert breakdown.weights == 26 * GB  # 13e9 × 2 bytes


def test_llama_3_8b_kv_bytes_per_token_uses_kv_heads():
    """Grouped-query attention: 2 × 32 layers × 8 KV heads × 128 × 2 bytes = 131,072
    (128 KiB); with all 32 heads it would be 4× larger. Tensor parallel 2 splits the KV
    heads: 4 per GPU → 65,536. Tensor parallel 16 > 8 KV heads: each GPU keeps one whole
    (replicated) head → 2 × 32 × 1 × 128 × 2 = 16,384, not 8,192."""
    assert kv_cache_bytes_per_token(LLAMA_3_8B, "bf16") == 131_072
    assert kv_cache_bytes_per_token(LLAMA_3_8B, "fp8") == 65_536
    assert kv_cache_bytes_per_token(LLAMA_3_8B, "bf16", tensor_parallel=2) == 65_536
    assert kv_cache_bytes_per_token(LLAMA_3_8B, "bf16", tensor_parallel=16) == 16_384

    replicated = inference_memory_per_gpu(LLAMA_3_8B, InferenceSettings(tensor_parallel=16))
    assert any("replicated" in note for note in replicated.notes)


def test_llama_3_8b_max_concurrent_sequences_on_80_gb_without_overhead():
    """Hand, bf16 on an 80 GB (80·10^9 bytes) GPU at 8192 context, no overhead:
    weights 8,030,261,248 × 2 = 16,060,522,496; KV per sequence 131,072 × 8192 =
    1,073,741,824 (1 GiB). (80e9 − 16,060,522,496) / 1,073,741,824 = 63,939,477,504 /
    1,073,741,824 = 59.55 → 59 sequences:
    n = 59: 16,060,522,496 + 59 GiB (63,350,767,616) = 79,411,290,112 ≤ 80e9;
    n = 60: 80,485,031,936 > 80e9."""
    settings = InferenceSettings(context_length=8192)

    n = max_concurrent_sequences(LLAMA_3_8B, settings, 80 * GB, NO_OVERHEAD)

    assert n == 59
    at_n = inference_memory_per_gpu(
        LLAMA_3_8B, InferenceSettings(context_length=8192, concurrent_sequences=59), NO_OVERHEAD
    )
    at_n_plus_1 = inference_memory_per_gpu(
        LLAMA_3_8B, InferenceSettings(context_length=8192, concurrent_sequences=60), NO_OVERHEAD
    )
    assert at_n.total == 79_411_290_112 and fits(at_n, 80 * GB)
    assert at_n_plus_1.total == 80_485_031_936 and not fits(at_n_plus_1, 80 * GB)


def test_llama_3_8b_max_concurrent_sequences_on_80_gb_with_overhead():
    """Same, with overhead 2 GiB + 5 %: total(n) = 1.05·(16,060,522,496 + n GiB) +
    2,147,483,648 ≤ 80e9 → 16,060,522,496 + n GiB ≤ 77,852,516,352 / 1.05 =
    74,145,253,668.6 → n ≤ 58,084,731,172.6 / 1,073,741,824 = 54.1 → 54.
    n = 54: 74,042,580,992 + ceil(3,702,129,049.6) + 2,147,483,648 = 79,892,193,690.
    n = 55: 75,116,322,816 + ceil(3,755,816,140.8) + 2,147,483,648 = 81,019,622,605."""
    overhead = Overhead(fixed_bytes=2 * GIB, fraction=0.05)

    n = max_concurrent_sequences(
        LLAMA_3_8B, InferenceSettings(context_length=8192), 80 * GB, overhead
    )

    assert n == 54
    at_n = inference_memory_per_gpu(
        LLAMA_3_8B, InferenceSettings(context_length=8192, concurrent_sequences=54), overhead
    )
    at_n_plus_1 = inference_memory_per_gpu(
        LLAMA_3_8B, InferenceSettings(context_length=8192, concurrent_sequences=55), overhead
    )
    assert at_n.total == 79_892_193_690
    assert headroom_bytes(at_n, 80 * GB) == 107_806_310
    assert at_n_plus_1.total == 81_019_622_605
    assert headroom_bytes(at_n_plus_1, 80 * GB) == -1_019_622_605


def test_max_concurrent_sequences_is_zero_when_the_weights_do_not_fit():
    """Llama 3 8B bf16 weights are 16,060,522,496 bytes > a 16 GB (16e9) GPU."""
    assert max_concurrent_sequences(LLAMA_3_8B, InferenceSettings(), 16 * GB, NO_OVERHEAD) == 0


def test_quantised_weights_round_up_to_whole_bytes():
    """int4 is half a byte per parameter: 1,001 × 0.5 = 500.5 → 501; int8 1,001; with
    tensor parallel 2: 8,030,261,248 × 0.5 / 2 = 2,007,565,312 exactly."""

    def weights(shape, precision, tensor_parallel=1):
        settings = InferenceSettings(weight_precision=precision, tensor_parallel=tensor_parallel)
        return inference_memory_per_gpu(shape, settings).weights

    assert weights(ModelShape(params=1_001), "int4") == 501
    assert weights(ModelShape(params=1_001), "int8") == 1_001
    assert weights(LLAMA_3_8B, "int4", tensor_parallel=2) == 2_007_565_312


def test_mixture_of_experts_keeps_all_experts_resident_but_reads_active_ones():
    """Mixtral 8x7B (Jiang et al. 2024): 47B parameters, 13B active per token; 32 layers,
    hidden 4096, 32 heads, 8 KV heads. Memory holds all 47e9 × 2 = 94e9 bytes of bf16
    weights; a decode step reads only 13e9 × 2 = 26e9. Hand, 3.35e12 B/s, no KV shape in
    the read (context 1, KV per token 2·32·8·128·2 = 131,072): 3.35e12 / (26e9 + 131,072)
    = 128.85 tokens/s."""
    mixtral = ModelShape(
        params=47 * GB,
        active_params=13 * GB,
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=8,
    )
    settings = InferenceSettings(context_length=1)

    assert inference_memory_per_gpu(mixtral, settings).weights == 94 * GB
    assert decode_tokens_per_second_ceiling(mixtral, settings, 3.35e12) == pytest.approx(
        3.35e12 / (26 * GB + 131_072)
    )
    assert decode_tokens_per_second_ceiling(mixtral, settings, 3.35e12) == pytest.approx(
        128.85, abs=0.01
    )


def test_inference_with_uneven_head_split_is_estimated_with_a_note():
    """Qwen2.5-7B has 28 heads and 4 KV heads: 8-way tensor parallel splits neither evenly
    (vLLM refuses it), but callers compare options, so the estimate is made and flagged.
    Hand: KV heads per GPU ceil(4 / 8) = 1 → 2 × 28 layers × 1 × 128 × 2 = 14,336 B/token."""
    qwen = ModelShape(
        params=7_615_616_512,
        layers=28,
        hidden_size=3584,
        attention_heads=28,
        kv_heads=4,
        head_dim=128,
    )
    breakdown = inference_memory_per_gpu(qwen, InferenceSettings(tensor_parallel=8))

    assert kv_cache_bytes_per_token(qwen, "bf16", tensor_parallel=8) == 14_336
    assert any("does not divide the 28 attention heads" in note for note in breakdown.notes)


def test_inference_with_params_only_has_no_kv_cache_and_says_so():
    breakdown = inference_memory_per_gpu(ModelShape(params=1_000), InferenceSettings())

    assert breakdown.kv_cache == 0
    assert breakdown.notes == (
        "The KV cache needs layers and KV heads with head dimension (or hidden size and "
        "attention heads); it is counted as 0.",
    )
    assert (breakdown.gradients, breakdown.optimizer_states, breakdown.activations) == (0, 0, 0)


# --- Compute, throughput and cost -------------------------------------------------------


def test_llama_3_405b_training_flops():
    """Llama 3 paper (Dubey et al. 2024): 405B parameters on 15.6T tokens, 3.8·10^25 FLOPs.
    Hand: 6 × 405e9 × 15.6e12 = 3.7908e25, within 1 % of the paper's 3.8e25."""
    flops = training_flops(405 * GB, 15_600 * GB)

    assert flops == pytest.approx(3.7908e25)
    assert flops == pytest.approx(3.8e25, rel=0.01)


def test_llama_3_405b_training_time_on_h100():
    """Hand: 16,384 H100 SXM × 989 TFLOP/s dense BF16 (NVIDIA datasheet) × 0.40 MFU
    (the Llama 3 paper reports 38–43 %) = 6.4815104e18 FLOP/s;
    3.7908e25 / 6.4815104e18 = 5,848,636.8 s = 67.7 days."""
    seconds = training_time_seconds(405 * GB, 15_600 * GB, 16_384, 989e12, 0.40)

    assert seconds == pytest.approx(5_848_636.8, rel=1e-7)
    assert seconds / 86_400 == pytest.approx(67.69, abs=0.01)


def test_decode_ceiling_llama_2_7b_on_a100():
    """Decode reads every weight once per step. Hand: fp16 weights 6,738,415,616 × 2 =
    13,476,831,232 bytes (≈ 13.5 GB); A100 80GB SXM bandwidth 2,039 GB/s (NVIDIA
    datasheet); batch 1:
    ignoring KV: 2.039e12 / 13,476,831,232 = 151.3 tokens/s;
    with a full 4096-token KV cache (2·32·32·128·2 = 524,288 B/token × 4096 =
    2,147,483,648): 2.039e12 / 15,624,314,880 = 130.5 tokens/s."""
    weights_only_shape = ModelShape(params=6_738_415_616)  # no KV dimensions → no KV read
    settings = InferenceSettings(
        weight_precision="fp16", kv_cache_precision="fp16", context_length=4096
    )

    assert decode_tokens_per_second_ceiling(
        weights_only_shape, settings, 2.039e12
    ) == pytest.approx(151.30, abs=0.01)
    assert decode_tokens_per_second_ceiling(LLAMA_2_7B, settings, 2.039e12) == pytest.approx(
        130.50, abs=0.01
    )


def test_decode_ceiling_scales_with_batch_and_tensor_parallel():
    """Hand, Llama 2 7B fp16, context 1 (KV 524,288 B/token), 2.039e12 B/s:
    batch 8: 8 × 2.039e12 / (13,476,831,232 + 8 × 524,288) = 8 × 151.25 = 1,210.0;
    tensor parallel 2 (each GPU reads half: 6,738,415,616 + 262,144): 302.58 steps/s."""
    batch_8 = InferenceSettings(
        weight_precision="fp16", kv_cache_precision="fp16", context_length=1, concurrent_sequences=8
    )
    tp_2 = InferenceSettings(
        weight_precision="fp16", kv_cache_precision="fp16", context_length=1, tensor_parallel=2
    )

    assert decode_tokens_per_second_ceiling(LLAMA_2_7B, batch_8, 2.039e12) == pytest.approx(
        8 * 2.039e12 / (13_476_831_232 + 8 * 524_288)
    )
    assert decode_tokens_per_second_ceiling(LLAMA_2_7B, tp_2, 2.039e12) == pytest.approx(
        2.039e12 / (6_738_415_616 + 262_144)
    )
    assert decode_tokens_per_second_ceiling(LLAMA_2_7B, tp_2, 2.039e12) == pytest.approx(
        302.58, abs=0.01
    )


def test_cost_per_million_tokens():
    """FORMULAS.md: price × GPUs ÷ (tokens/s × 3600) × 10^6. Hand: 8 GPUs × 2.50 USD/h =
    20 USD/h; 2,000 tokens/s × 3600 = 7.2M tokens/h; 20 / 7.2 = 2.78 USD per 1M tokens.
    A single GPU at 3.60 USD/h and 1,000 tokens/s: 3.60 / 3.6 = 1.00 USD."""
    assert cost_per_million_tokens_usd(2.50, 8, 2_000) == pytest.approx(20 / 7.2)
    assert cost_per_million_tokens_usd(3.60, 1, 1_000) == pytest.approx(1.0)
    assert cost_per_million_tokens_usd(2.50, 8, 0) is None


# --- Invalid input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: TrainingSettings(precision="fp64"), "precision"),
        (lambda: TrainingSettings(optimizer="adam"), "optimizer"),
        (lambda: TrainingSettings(recompute="partial"), "recompute"),
        (lambda: TrainingSettings(zero_stage=4), "zero_stage"),
        (lambda: TrainingSettings(zero_stage=-1), "zero_stage"),
        (lambda: TrainingSettings(data_parallel=0), "data_parallel"),
        (lambda: TrainingSettings(tensor_parallel=-2), "tensor_parallel"),
        (lambda: TrainingSettings(pipeline_parallel=0), "pipeline_parallel"),
        (lambda: TrainingSettings(micro_batch_size=0), "micro_batch_size"),
        (lambda: TrainingSettings(seq_len=0), "seq_len"),
        (lambda: InferenceSettings(weight_precision="tf32"), "weight_precision"),
        (lambda: InferenceSettings(kv_cache_precision="fp4"), "kv_cache_precision"),
        (lambda: InferenceSettings(context_length=0), "context_length"),
        (lambda: InferenceSettings(concurrent_sequences=0), "concurrent_sequences"),
        (lambda: InferenceSettings(tensor_parallel=0), "tensor_parallel"),
        (lambda: ModelShape(params=0), "params"),
        (lambda: ModelShape(params=7.5e9), "params"),
        (lambda: ModelShape(params=10, layers=0), "layers"),
        (lambda: ModelShape(params=10, hidden_size=100, attention_heads=7), "hidden_size"),
        (lambda: ModelShape(params=10, attention_heads=32, kv_heads=5), "kv_heads"),
        (lambda: ModelShape(params=10, active_params=11), "active_params"),
        (lambda: Overhead(fraction=1.5), "fraction"),
        (lambda: Overhead(fixed_bytes=-1), "fixed_bytes"),
        (lambda: training_flops(10, 0), "tokens"),
        (lambda: training_time_seconds(10, 10, 1, 1e15, 0), "mfu"),
        (lambda: training_time_seconds(10, 10, 1, 1e15, 1.5), "mfu"),
        (lambda: training_time_seconds(10, 10, 0, 1e15, 0.5), "gpus"),
        (lambda: training_time_seconds(10, 10, 1, 0, 0.5), "peak_flops_per_gpu"),
        (
            lambda: training_memory_per_gpu(LLAMA_3_8B, TrainingSettings(tensor_parallel=3)),
            "tensor_parallel",
        ),
        (
            lambda: training_memory_per_gpu(LLAMA_3_8B, TrainingSettings(pipeline_parallel=33)),
            "pipeline_parallel",
        ),
        (lambda: kv_cache_bytes_per_token(ModelShape(params=10), "bf16"), "KV cache"),
        (lambda: kv_cache_bytes_per_token(LLAMA_3_8B, "fp64"), "kv_cache_precision"),
        (
            lambda: max_concurrent_sequences(ModelShape(params=10), InferenceSettings(), GB),
            "KV cache",
        ),
        (
            lambda: max_concurrent_sequences(LLAMA_3_8B, InferenceSettings(), 0),
            "gpu_memory_bytes",
        ),
        (
            lambda: decode_tokens_per_second_ceiling(LLAMA_3_8B, InferenceSettings(), 0),
            "memory_bandwidth_bytes_per_second",
        ),
        (lambda: cost_per_million_tokens_usd(2.5, 1, -1), "tokens_per_second"),
        (lambda: cost_per_million_tokens_usd(-2.5, 1, 1), "price_per_gpu_hour_usd"),
    ],
)
def test_invalid_input_names_the_field(make, field):
    with pytest.raises(ValueError, match=field):
        make()


# --- Properties over a few shapes -------------------------------------------------------

SHAPES = [KORTHIKANTI_22B, LLAMA_3_8B, LLAMA_3_70B, OPT_13B, ModelShape(params=1_234_567)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("optimizer", ["adamw", "adamw_8bit", "sgd_momentum"])
@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_higher_zero_stages_never_hold_more_model_states(shape, optimizer, precision):
    """ZeRO §5: each stage partitions one more kind of state, so bytes never grow."""
    per_stage = [
        model_states(
            training_memory_per_gpu(
                shape,
                TrainingSettings(
                    precision=precision, optimizer=optimizer, zero_stage=stage, data_parallel=8
                ),
            )
        )
        for stage in range(4)
    ]

    assert per_stage == sorted(per_stage, reverse=True)
    assert per_stage[0] > per_stage[3]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("zero_stage", [1, 2, 3])
def test_more_data_parallel_never_increases_memory_under_zero(shape, zero_stage):
    totals = [
        training_memory_per_gpu(
            shape, TrainingSettings(zero_stage=zero_stage, data_parallel=data_parallel)
        ).total
        for data_parallel in (1, 2, 3, 4, 8, 16, 64, 1024)
    ]

    assert totals == sorted(totals, reverse=True)


@pytest.mark.parametrize("shape", [LLAMA_3_8B, LLAMA_3_70B, OPT_13B, LLAMA_2_7B])
@pytest.mark.parametrize(
    ("weight_precision", "kv_cache_precision", "tensor_parallel"),
    [("bf16", "bf16", 1), ("fp8", "fp8", 2), ("int4", "bf16", 4), ("int8", "int8", 8)],
)
@pytest.mark.parametrize("gpu_memory_bytes", [24 * GB, 80 * GB, 141 * GB])
@pytest.mark.parametrize("context_length", [2048, 32_768])
def test_max_concurrent_sequences_fits_and_one_more_does_not(
    shape,
    weight_precision,
    kv_cache_precision,
    tensor_parallel,
    gpu_memory_bytes,
    context_length,
):
    settings = InferenceSettings(
        weight_precision=weight_precision,
        kv_cache_precision=kv_cache_precision,
        context_length=context_length,
        tensor_parallel=tensor_parallel,
    )

    n = max_concurrent_sequences(shape, settings, gpu_memory_bytes)

    def breakdown_for(sequences):
        return inference_memory_per_gpu(
            shape,
            InferenceSettings(
                weight_precision=weight_precision,
                kv_cache_precision=kv_cache_precision,
                context_length=context_length,
                concurrent_sequences=sequences,
                tensor_parallel=tensor_parallel,
            ),
        )

    if n > 0:
        assert fits(breakdown_for(n), gpu_memory_bytes)
    assert not fits(breakdown_for(n + 1), gpu_memory_bytes)
    # Cross-check against the closed form for the default overhead (2 GiB + 5 %):
    # 1.05·(weights + n·kv) + 2 GiB ≤ memory, within one sequence of rounding.
    kv_per_sequence = kv_cache_bytes_per_token(shape, kv_cache_precision, tensor_parallel) * (
        context_length
    )
    weights = breakdown_for(1).weights
    closed_form = math.floor(((gpu_memory_bytes - 2 * GIB) / 1.05 - weights) / kv_per_sequence)
    assert abs(n - max(closed_form, 0)) <= 1
