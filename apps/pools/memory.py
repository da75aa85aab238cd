"""Memory-fit engine: will a model train or serve on a given GPU, and how fast, at what cost.

Framework-free (standard library only) so that views, the API, commands and tests can all
call it with plain numbers. Every estimate follows a published formula, cited in the
docstring of the function that applies it; /work/shared/docs/FORMULAS.md collects them.

Units: every byte count is an exact Python ``int`` of bytes. Where a division happens the
result is rounded *up* (integer ceiling division, so that 10^11-byte figures are not
disturbed by float rounding): an estimate that says "fits" must not be short by a byte.
``GIB`` is 2^30 bytes; the ZeRO paper's and GPU vendors' "GB" is 10^9 bytes.

Sources:
- ZeRO: Rajbhandari et al. 2019, "ZeRO: Memory Optimizations Toward Training Trillion
  Parameter Models", arXiv 1910.02054, §3.1 (model states), §3.2 (residual memory), §5.
- EleutherAI, "Transformer Math 101", 2023 (8-bit Adam and SGD-with-momentum states).
- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
  Models", arXiv 2205.05198, §4 (activation memory per layer).
- Kwon et al. 2023, "Efficient Memory Management for Large Language Model Serving with
  PagedAttention" (vLLM), §3 (KV cache size).
- Kaplan et al. 2020 and Hoffmann et al. 2022 (training FLOPs ≈ 6·N·D); Chowdhery et al.
  2022, PaLM (model FLOPs utilisation).
"""

import math
from dataclasses import dataclass, replace

from apps.core.sentences import gettext_noop, sentence

GIB = 2**30

BYTES_PER_PARAMETER = {
    "fp32": 4,
    "tf32": 4,  # TF32 is a tensor-core compute mode; values are stored as 4-byte fp32
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
}
TRAINING_PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8")
OPTIMIZERS = ("adamw", "adamw_8bit", "sgd_momentum")
RECOMPUTE_MODES = ("none", "selective", "full")
INFERENCE_PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "int8", "int4")

# Precisions trained as "mixed precision" in the ZeRO sense: 16-bit weights and gradients
# plus an fp32 master copy of the weights inside the optimizer states. FP8 belongs here
# because FP8 training recipes (e.g. NVIDIA Transformer Engine) run only the matrix
# multiplies in FP8: they keep 16-bit weights and gradients, fp32 master weights and
# per-tensor scaling factors, so counting 1-byte weights would promise memory that the
# frameworks do not actually save.
_MIXED_PRECISIONS = ("bf16", "fp16", "fp8")

# Optimizer-state bytes per parameter, K in ZeRO's (2 + 2 + K)Ψ.
# Mixed precision (ZeRO §3.1; Transformer Math 101): the fp32 master weights (4 bytes)
# live in the optimizer states, so every K includes them.
_OPTIMIZER_BYTES_PER_PARAMETER_MIXED = {
    "adamw": 12,  # fp32 master 4 + momentum 4 + variance 4
    "adamw_8bit": 6,  # fp32 master 4 + 1-byte momentum + 1-byte variance
    "sgd_momentum": 8,  # fp32 master 4 + momentum 4
}
# Pure fp32/tf32: the weights themselves are fp32, so there is no separate master copy.
_OPTIMIZER_BYTES_PER_PARAMETER_FP32 = {
    "adamw": 8,  # momentum 4 + variance 4
    "adamw_8bit": 2,  # two 1-byte states
    "sgd_momentum": 4,  # momentum 4
}


def _ceil_div(numerator: int, denominator: int) -> int:
    """Ceiling of numerator ÷ denominator for non-negative integers, without floats."""
    return -(-numerator // denominator)


def _bits_per_parameter(precision: str) -> int:
    # Work in bits so int4's half byte stays an exact integer.
    return int(BYTES_PER_PARAMETER[precision] * 8)


def _require_positive_int(field_name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{field_name} must be a whole number of at least 1 (got {value!r}).")


def _require_choice(field_name: str, value, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{field_name} must be one of {', '.join(choices)} (got {value!r}).")


def _require_positive_number(field_name: str, value) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{field_name} must be a number greater than 0 (got {value!r}).")


@dataclass(frozen=True)
class ModelShape:
    """What the estimates need to know about a transformer.

    ``params`` (Ψ) is enough for model states and weights. Activations also need
    ``layers``, ``hidden_size`` and ``attention_heads``; the KV cache needs ``layers``,
    the KV heads and the head dimension (given, or derived from hidden size ÷ heads).
    ``kv_heads`` below ``attention_heads`` describes grouped-query attention;
    ``active_params`` below ``params`` describes a mixture-of-experts model.
    """

    params: int
    layers: int | None = None
    hidden_size: int | None = None
    attention_heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    active_params: int | None = None

    def __post_init__(self):
        _require_positive_int("params", self.params)
        for field_name in (
            "layers",
            "hidden_size",
            "attention_heads",
            "kv_heads",
            "head_dim",
            "active_params",
        ):
            value = getattr(self, field_name)
            if value is not None:
                _require_positive_int(field_name, value)
        if self.active_params is not None and self.active_params > self.params:
            raise ValueError(
                sentence(
                    gettext_noop("active_params (%(active)s) cannot exceed params (%(params)s)."),
                    active=self.active_params,
                    params=self.params,
                )
            )
        if (
            self.kv_heads is not None
            and self.attention_heads is not None
            and self.attention_heads % self.kv_heads
        ):
            raise ValueError(
                sentence(
                    gettext_noop(
                        "kv_heads (%(kv_heads)s) must divide attention_heads (%(heads)s): in "
                        "grouped-query attention each KV head serves an equal group of query "
                        "heads."
                    ),
                    kv_heads=self.kv_heads,
                    heads=self.attention_heads,
                )
            )
        if (
            self.head_dim is None
            and self.hidden_size is not None
            and self.attention_heads is not None
            and self.hidden_size % self.attention_heads
        ):
            raise ValueError(
                sentence(
                    gettext_noop(
                        "hidden_size (%(hidden)s) is not divisible by attention_heads "
                        "(%(heads)s), so head_dim cannot be derived; give head_dim."
                    ),
                    hidden=self.hidden_size,
                    heads=self.attention_heads,
                )
            )

    @property
    def effective_kv_heads(self) -> int | None:
        """KV heads; without grouped-query attention every attention head has its own."""
        return self.kv_heads if self.kv_heads is not None else self.attention_heads

    @property
    def effective_head_dim(self) -> int | None:
        if self.head_dim is not None:
            return self.head_dim
        if self.hidden_size is not None and self.attention_heads is not None:
            return self.hidden_size // self.attention_heads
        return None

    @property
    def effective_active_params(self) -> int:
        """Parameters used per token: all of them for a dense model."""
        return self.active_params if self.active_params is not None else self.params

    @property
    def has_activation_shape(self) -> bool:
        return (
            self.layers is not None
            and self.hidden_size is not None
            and self.attention_heads is not None
        )

    @property
    def has_kv_shape(self) -> bool:
        return (
            self.layers is not None
            and self.effective_kv_heads is not None
            and self.effective_head_dim is not None
        )


@dataclass(frozen=True)
class TrainingSettings:
    precision: str = "bf16"
    optimizer: str = "adamw"
    zero_stage: int = 0
    data_parallel: int = 1
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    sequence_parallel: bool = False
    recompute: str = "none"
    micro_batch_size: int = 1
    seq_len: int = 2048

    def __post_init__(self):
        _require_choice("precision", self.precision, TRAINING_PRECISIONS)
        _require_choice("optimizer", self.optimizer, OPTIMIZERS)
        _require_choice("recompute", self.recompute, RECOMPUTE_MODES)
        if isinstance(self.zero_stage, bool) or self.zero_stage not in (0, 1, 2, 3):
            raise ValueError(f"zero_stage must be 0, 1, 2 or 3 (got {self.zero_stage!r}).")
        for field_name in (
            "data_parallel",
            "tensor_parallel",
            "pipeline_parallel",
            "micro_batch_size",
            "seq_len",
        ):
            _require_positive_int(field_name, getattr(self, field_name))
        if not isinstance(self.sequence_parallel, bool):
            raise ValueError(
                f"sequence_parallel must be True or False (got {self.sequence_parallel!r})."
            )


@dataclass(frozen=True)
class InferenceSettings:
    weight_precision: str = "bf16"
    kv_cache_precision: str = "bf16"
    context_length: int = 4096
    concurrent_sequences: int = 1
    tensor_parallel: int = 1

    def __post_init__(self):
        _require_choice("weight_precision", self.weight_precision, INFERENCE_PRECISIONS)
        _require_choice("kv_cache_precision", self.kv_cache_precision, INFERENCE_PRECISIONS)
        for field_name in ("context_length", "concurrent_sequences", "tensor_parallel"):
            _require_positive_int(field_name, getattr(self, field_name))


@dataclass(frozen=True)
class Overhead:
    """Runtime overhead, its own line: CUDA context + allocator fragmentation (+ forward-pass
    activations for inference).

    The line is ``fixed_bytes + ceil(fraction × sum of the other lines)``: a fixed part for
    what does not grow with the model (CUDA context, library workspaces, communication
    buffers) and a proportional part for what does (allocator fragmentation, temporary
    buffers sized like the tensors they serve). These are rules of thumb, not a published
    formula, which is why they are a separate, configurable line (FORMULAS.md).
    """

    fixed_bytes: int = 1 * GIB
    fraction: float = 0.05

    def __post_init__(self):
        if (
            isinstance(self.fixed_bytes, bool)
            or not isinstance(self.fixed_bytes, int)
            or self.fixed_bytes < 0
        ):
            raise ValueError(
                f"fixed_bytes must be a whole number of bytes, 0 or more "
                f"(got {self.fixed_bytes!r})."
            )
        if (
            isinstance(self.fraction, bool)
            or not isinstance(self.fraction, int | float)
            or not 0 <= self.fraction < 1
        ):
            raise ValueError(f"fraction must be at least 0 and below 1 (got {self.fraction!r}).")

    def bytes_for(self, other_lines_bytes: int) -> int:
        return self.fixed_bytes + math.ceil(self.fraction * other_lines_bytes)


# Training: 2 GiB fixed covers the CUDA context with cuBLAS/cuDNN/NCCL kernels loaded
# (≈0.5–1 GiB on current GPUs) plus NCCL and gradient-bucket communication buffers, which
# ZeRO §3.2 counts among the "residual states" next to activations. 10 % proportional
# covers allocator fragmentation, which ZeRO §3.2 also names as a cause of out-of-memory
# errors while memory is nominally free, and temporary fused buffers that scale with the
# model. Training peaks are spiky (backward pass, optimizer step), hence the larger margin.
DEFAULT_TRAINING_OVERHEAD = Overhead(fixed_bytes=2 * GIB, fraction=0.10)

# Inference: 2 GiB fixed covers the CUDA context, CUDA-graph memory pools and the
# forward-pass activation workspace of one prefill chunk, which serving engines reserve
# up front (vLLM profiles it with a dummy batch). Only 5 % proportional: weights are
# allocated once and PagedAttention keeps KV-cache waste under 4 % (Kwon et al. 2023),
# so fragmentation is much smaller than in training.
DEFAULT_INFERENCE_OVERHEAD = Overhead(fixed_bytes=2 * GIB, fraction=0.05)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU, line by line, so a user can check each one by hand."""

    weights: int
    gradients: int
    optimizer_states: int
    activations: int | None
    kv_cache: int
    overhead: int
    notes: tuple[str, ...] = ()

    @property
    def model_states(self) -> int:
        """Weights + gradients + optimizer states: what ZeRO §3.1 calls model states."""
        return self.weights + self.gradients + self.optimizer_states

    @property
    def total(self) -> int:
        return self.model_states + (self.activations or 0) + self.kv_cache + self.overhead

    def as_dict(self) -> dict[str, int | None]:
        return {
            "weights": self.weights,
            "gradients": self.gradients,
            "optimizer_states": self.optimizer_states,
            "activations": self.activations,
            "kv_cache": self.kv_cache,
            "overhead": self.overhead,
            "total": self.total,
        }


def _check_heads_split(shape: ModelShape, tensor_parallel: int) -> None:
    # Megatron-LM gives each tensor-parallel GPU a whole number of heads, and the
    # activation formula's 5as/(ht) term assumes that even split.
    if shape.attention_heads is not None and shape.attention_heads % tensor_parallel:
        raise ValueError(
            sentence(
                gettext_noop(
                    "tensor_parallel (%(tensor)s) must divide attention_heads (%(heads)s): "
                    "each GPU holds an equal share of the heads."
                ),
                tensor=tensor_parallel,
                heads=shape.attention_heads,
            )
        )


def _activation_bytes_per_gpu(shape: ModelShape, settings: TrainingSettings) -> int:
    """Korthikanti et al. 2022 (arXiv 2205.05198), §4 and Table 2, per GPU.

    Per layer, 16-bit, with s = seq_len, b = micro-batch, h = hidden, a = heads,
    t = tensor parallel:
    - no recompute: s·b·h·(10 + 24/t + 5·a·s/(h·t)) (= 34 + 5as/h at t = 1);
      with sequence parallel s·b·h·(34/t + 5·a·s/(h·t));
    - selective recompute: s·b·h·(10 + 24/t); with sequence parallel s·b·h·34/t;
    - full recompute: 2·s·b·h (only the layer input is kept).
    Times ceil(L/p) layers on one pipeline stage.
    """
    t = settings.tensor_parallel
    sbh = settings.seq_len * settings.micro_batch_size * shape.hidden_size
    # s·b·h · 5·a·s/h = 5·a·s²·b: the attention scores, softmax and its dropout mask.
    attention_score_bytes = (
        5 * shape.attention_heads * settings.seq_len**2 * settings.micro_batch_size
    )
    # Each numerator below is (bytes per layer) × t, so one exact ceiling at the end.
    if settings.recompute == "full":
        # The paper's 2sbh does not shrink with t. Megatron with sequence parallel can store
        # the layer input sharded (2sbh/t); we keep the larger figure, which is the safe one.
        per_layer_times_t = 2 * sbh * t
    elif settings.recompute == "selective":
        # Only the attention scores (the 5as/h term) are recomputed.
        per_layer_times_t = 34 * sbh if settings.sequence_parallel else 10 * sbh * t + 24 * sbh
    elif settings.sequence_parallel:
        per_layer_times_t = 34 * sbh + attention_score_bytes
    else:
        per_layer_times_t = 10 * sbh * t + 24 * sbh + attention_score_bytes

    layers_per_stage = _ceil_div(shape.layers, settings.pipeline_parallel)
    # The paper counts 16-bit activations. fp32/tf32 training stores 4-byte activations:
    # twice as much. FP8 keeps the 16-bit figure on purpose: FP8 recipes still keep the
    # softmax, layer-norm inputs, residual stream and dropout masks out of FP8, so
    # halving would under-count; the 16-bit figure is the conservative one.
    precision_scale = 2 if settings.precision in ("fp32", "tf32") else 1
    return _ceil_div(per_layer_times_t * layers_per_stage * precision_scale, t)


def training_memory_per_gpu(
    shape: ModelShape,
    settings: TrainingSettings,
    overhead: Overhead = DEFAULT_TRAINING_OVERHEAD,
) -> MemoryBreakdown:
    """Peak training memory on one GPU, line by line.

    Model states (ZeRO, Rajbhandari et al. 2019, arXiv 1910.02054, §3.1; other optimizers
    from EleutherAI "Transformer Math 101", 2023): mixed precision (bf16, fp16, fp8)
    keeps 2Ψ weights + 2Ψ gradients + KΨ optimizer states, K = 12 AdamW, 6 8-bit AdamW,
    8 SGD with momentum; pure fp32/tf32 keeps 4Ψ + 4Ψ + (8, 2, 4)Ψ. Tensor (t) and
    pipeline (p) parallelism divide model states by t·p; then ZeRO over data-parallel N_d
    divides the optimizer states (stage ≥ 1), gradients (≥ 2) and weights (3) by N_d.

    Activations: Korthikanti et al. 2022 (see ``_activation_bytes_per_gpu``); ``None``
    when the shape lacks layers, hidden size or attention heads. KV cache is 0 (training
    keeps no KV cache). Overhead = fixed + ceil(fraction × the other lines).
    """
    _check_heads_split(shape, settings.tensor_parallel)
    if shape.layers is not None and settings.pipeline_parallel > shape.layers:
        raise ValueError(
            sentence(
                gettext_noop(
                    "pipeline_parallel (%(pipeline)s) cannot exceed layers (%(layers)s): "
                    "every pipeline stage needs at least one layer."
                ),
                pipeline=settings.pipeline_parallel,
                layers=shape.layers,
            )
        )

    if settings.precision in _MIXED_PRECISIONS:
        weight_bytes_per_parameter = 2
        gradient_bytes_per_parameter = 2
        optimizer_bytes_per_parameter = _OPTIMIZER_BYTES_PER_PARAMETER_MIXED[settings.optimizer]
    else:
        weight_bytes_per_parameter = 4
        gradient_bytes_per_parameter = 4
        optimizer_bytes_per_parameter = _OPTIMIZER_BYTES_PER_PARAMETER_FP32[settings.optimizer]

    model_parallel = settings.tensor_parallel * settings.pipeline_parallel
    data_parallel = settings.data_parallel
    stage = settings.zero_stage
    # One exact ceiling of Ψ·bytes ÷ (t·p·N_d) per line rather than rounding twice.
    optimizer_states = _ceil_div(
        optimizer_bytes_per_parameter * shape.params,
        model_parallel * (data_parallel if stage >= 1 else 1),
    )
    gradients = _ceil_div(
        gradient_bytes_per_parameter * shape.params,
        model_parallel * (data_parallel if stage >= 2 else 1),
    )
    weights = _ceil_div(
        weight_bytes_per_parameter * shape.params,
        model_parallel * (data_parallel if stage >= 3 else 1),
    )

    notes: list[str] = []
    if shape.has_activation_shape:
        activations = _activation_bytes_per_gpu(shape, settings)
        if settings.pipeline_parallel > 1:
            notes.append(
                sentence(
                    gettext_noop(
                        "Activations count one micro-batch on each pipeline stage of "
                        "%(layers)s layers; with a 1F1B schedule the first stage can hold up "
                        "to %(pipeline)s micro-batches in flight (Korthikanti et al. 2022, "
                        "§4.2.3)."
                    ),
                    layers=_ceil_div(shape.layers, settings.pipeline_parallel),
                    pipeline=settings.pipeline_parallel,
                )
            )
    else:
        activations = None
        notes.append(
            sentence(
                gettext_noop(
                    "Activations need layers, hidden size and attention heads; only model "
                    "states are counted."
                )
            )
        )

    other_lines = weights + gradients + optimizer_states + (activations or 0)
    return MemoryBreakdown(
        weights=weights,
        gradients=gradients,
        optimizer_states=optimizer_states,
        activations=activations,
        kv_cache=0,
        overhead=overhead.bytes_for(other_lines),
        notes=tuple(notes),
    )


def _kv_heads_per_gpu(shape: ModelShape, tensor_parallel: int) -> int:
    # With fewer KV heads than GPUs, vLLM replicates KV heads so every GPU keeps at least
    # one: ceil(kv_heads / t) equals kv_heads / t whenever it divides evenly.
    return _ceil_div(shape.effective_kv_heads, tensor_parallel)


def kv_cache_bytes_per_token(
    shape: ModelShape, kv_cache_precision: str, tensor_parallel: int = 1
) -> int:
    """KV-cache bytes one token occupies on one GPU.

    2 (a key and a value) × layers × KV heads × head_dim × bytes per element (Kwon et al.
    2023, vLLM, §3: OPT-13B needs 2 × 5120 × 40 × 2 bytes = 800 KB per token). Grouped-query
    attention stores only ``kv_heads`` heads. Tensor parallelism splits the KV heads:
    ceil(kv_heads / t) per GPU, because when t exceeds kv_heads each GPU keeps a replica
    of one head rather than a fraction of it.
    """
    _require_choice("kv_cache_precision", kv_cache_precision, INFERENCE_PRECISIONS)
    _require_positive_int("tensor_parallel", tensor_parallel)
    if not shape.has_kv_shape:
        raise ValueError(
            sentence(
                gettext_noop(
                    "The KV cache needs layers and either kv_heads and head_dim or hidden_size "
                    "and attention_heads."
                )
            )
        )
    bits = (
        2
        * shape.layers
        * _kv_heads_per_gpu(shape, tensor_parallel)
        * shape.effective_head_dim
        * _bits_per_parameter(kv_cache_precision)
    )
    return _ceil_div(bits, 8)


def inference_memory_per_gpu(
    shape: ModelShape,
    settings: InferenceSettings,
    overhead: Overhead = DEFAULT_INFERENCE_OVERHEAD,
) -> MemoryBreakdown:
    """Serving memory on one GPU of a tensor-parallel replica, line by line.

    Weights = ceil(Ψ × bytes per parameter ÷ t); all experts of a mixture-of-experts model
    stay resident, so this uses ``params``, not ``active_params``. KV cache =
    ``kv_cache_bytes_per_token`` × context_length × concurrent_sequences (Kwon et al.
    2023, vLLM, §3), i.e. every sequence at its full context. Gradients, optimizer states
    and activations are 0: the forward pass keeps no activations for a backward pass, and
    its transient workspace belongs in the overhead line (fixed + ceil(fraction × the
    other lines)), as FORMULAS.md asks.
    """
    t = settings.tensor_parallel
    weights = _ceil_div(shape.params * _bits_per_parameter(settings.weight_precision), 8 * t)

    notes: list[str] = []
    # A note, not an error: callers compare tensor-parallel options side by side, and the
    # memory arithmetic still holds; the user needs to know the engine will refuse it.
    if shape.attention_heads is not None and shape.attention_heads % t:
        notes.append(
            sentence(
                gettext_noop(
                    "Tensor parallel %(tensor)s does not divide the %(heads)s attention heads; "
                    "serving engines such as vLLM refuse this split."
                ),
                tensor=t,
                heads=shape.attention_heads,
            )
        )
    if shape.has_kv_shape:
        kv_cache = (
            kv_cache_bytes_per_token(shape, settings.kv_cache_precision, t)
            * settings.context_length
            * settings.concurrent_sequences
        )
        if t > shape.effective_kv_heads:
            notes.append(
                sentence(
                    gettext_noop(
                        "Tensor parallel %(tensor)s exceeds the %(kv_heads)s KV heads: each GPU "
                        "keeps a whole KV head (replicated), so the KV cache per GPU stops "
                        "shrinking."
                    ),
                    tensor=t,
                    kv_heads=shape.effective_kv_heads,
                )
            )
    else:
        kv_cache = 0
        notes.append(
            sentence(
                gettext_noop(
                    "The KV cache needs layers and KV heads with head dimension (or hidden "
                    "size and attention heads); it is counted as 0."
                )
            )
        )

    return MemoryBreakdown(
        weights=weights,
        gradients=0,
        optimizer_states=0,
        activations=0,
        kv_cache=kv_cache,
        overhead=overhead.bytes_for(weights + kv_cache),
        notes=tuple(notes),
    )


def headroom_bytes(breakdown: MemoryBreakdown, gpu_memory_bytes: int) -> int:
    """GPU memory left after the estimate; negative when it does not fit."""
    _require_positive_int("gpu_memory_bytes", gpu_memory_bytes)
    return gpu_memory_bytes - breakdown.total


def fits(breakdown: MemoryBreakdown, gpu_memory_bytes: int) -> bool:
    return headroom_bytes(breakdown, gpu_memory_bytes) >= 0


def max_concurrent_sequences(
    shape: ModelShape,
    settings: InferenceSettings,
    gpu_memory_bytes: int,
    overhead: Overhead = DEFAULT_INFERENCE_OVERHEAD,
) -> int:
    """Largest n such that ``inference_memory_per_gpu`` with n sequences of
    ``settings.context_length`` tokens fits in ``gpu_memory_bytes``; 0 when not even one
    sequence (or the weights alone) fits. ``settings.concurrent_sequences`` is ignored.

    Same formulas as ``inference_memory_per_gpu`` (vLLM §3 for the KV cache), searched by
    bisection over n so the answer agrees with that function to the byte.
    """
    _require_positive_int("gpu_memory_bytes", gpu_memory_bytes)
    if not shape.has_kv_shape:
        raise ValueError(
            sentence(
                gettext_noop(
                    "Concurrent sequences are limited by the KV cache, which needs layers and "
                    "either kv_heads and head_dim or hidden_size and attention_heads."
                )
            )
        )

    def fits_with(sequences: int) -> bool:
        candidate = replace(settings, concurrent_sequences=sequences)
        return fits(inference_memory_per_gpu(shape, candidate, overhead), gpu_memory_bytes)

    if not fits_with(1):
        return 0
    kv_bytes_per_sequence = (
        kv_cache_bytes_per_token(shape, settings.kv_cache_precision, settings.tensor_parallel)
        * settings.context_length
    )
    fitting = 1
    # The KV cache alone of this many sequences exceeds the GPU, so it cannot fit.
    too_many = gpu_memory_bytes // kv_bytes_per_sequence + 1
    while too_many - fitting > 1:
        middle = (fitting + too_many) // 2
        if fits_with(middle):
            fitting = middle
        else:
            too_many = middle
    return fitting


def training_flops(params: int, tokens: int) -> float:
    """Training compute ≈ 6·N·D FLOPs (Kaplan et al. 2020; Hoffmann et al. 2022): 2·N per
    token forward, 4·N backward."""
    _require_positive_number("params", params)
    _require_positive_number("tokens", tokens)
    return 6.0 * params * tokens


def training_time_seconds(
    params: int, tokens: int, gpus: int, peak_flops_per_gpu: float, mfu: float
) -> float:
    """Wall-clock seconds ≈ 6·N·D ÷ (GPUs × peak dense FLOP/s × MFU).

    MFU is achieved model FLOP/s ÷ peak FLOP/s (Chowdhery et al. 2022, PaLM, §4.1); the
    peak must be the dense (not 2:4-sparse) datasheet figure for the training precision.
    """
    _require_positive_int("gpus", gpus)
    _require_positive_number("peak_flops_per_gpu", peak_flops_per_gpu)
    if isinstance(mfu, bool) or not isinstance(mfu, int | float) or not 0 < mfu <= 1:
        raise ValueError(f"mfu must be above 0 and at most 1 (got {mfu!r}).")
    return training_flops(params, tokens) / (gpus * peak_flops_per_gpu * mfu)


def decode_tokens_per_second_ceiling(
    shape: ModelShape,
    settings: InferenceSettings,
    memory_bandwidth_bytes_per_second: float,
) -> float:
    """Upper bound on generated tokens/s for one replica of ``tensor_parallel`` GPUs.

    Decoding is memory-bandwidth bound: each step reads the weights and the KV cache once,
    so steps/s ≤ bandwidth ÷ (weight bytes + KV bytes read per GPU per step), and each step
    yields one token per concurrent sequence. Weight reads use ``active_params`` (a
    mixture-of-experts token touches only its experts; larger batches touch more, so this
    stays an upper bound). KV read per step = ``kv_cache_bytes_per_token`` ×
    context_length × concurrent_sequences, i.e. every sequence at full context; a shape
    without KV dimensions reads weights only.
    """
    _require_positive_number("memory_bandwidth_bytes_per_second", memory_bandwidth_bytes_per_second)
    t = settings.tensor_parallel
    weight_bytes_per_step = _ceil_div(
        shape.effective_active_params * _bits_per_parameter(settings.weight_precision), 8 * t
    )
    kv_bytes_per_step = 0
    if shape.has_kv_shape:
        kv_bytes_per_step = (
            kv_cache_bytes_per_token(shape, settings.kv_cache_precision, t)
            * settings.context_length
            * settings.concurrent_sequences
        )
    steps_per_second = memory_bandwidth_bytes_per_second / (
        weight_bytes_per_step + kv_bytes_per_step
    )
    return steps_per_second * settings.concurrent_sequences


def cost_per_million_tokens_usd(
    price_per_gpu_hour_usd: float, gpus: int, tokens_per_second: float
) -> float | None:
    """USD per 10^6 tokens = price per GPU-hour × GPUs ÷ (tokens/s × 3600) × 10^6
    (FORMULAS.md, "Compute and throughput"); ``None`` when nothing is produced."""
    if (
        isinstance(price_per_gpu_hour_usd, bool)
        or not isinstance(price_per_gpu_hour_usd, int | float)
        or not math.isfinite(price_per_gpu_hour_usd)
        or price_per_gpu_hour_usd < 0
    ):
        raise ValueError(
            f"price_per_gpu_hour_usd must be 0 or more (got {price_per_gpu_hour_usd!r})."
        )
    _require_positive_int("gpus", gpus)
    if (
        isinstance(tokens_per_second, bool)
        or not isinstance(tokens_per_second, int | float)
        or not math.isfinite(tokens_per_second)
        or tokens_per_second < 0
    ):
        raise ValueError(f"tokens_per_second must be 0 or more (got {tokens_per_second!r}).")
    if tokens_per_second == 0:
        return None
    seconds_per_hour = 3600
    return price_per_gpu_hour_usd * gpus / (tokens_per_second * seconds_per_hour) * 1e6
