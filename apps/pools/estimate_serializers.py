"""Request and response of ``POST /api/v1/estimates/memory/`` (documented in the schema)."""

from rest_framework import serializers

from apps.pools.estimates import INFERENCE_DEFAULTS, TRAINING_DEFAULTS
from apps.pools.models import InferencePrecision, Optimizer, Recompute, TrainingPrecision


def _choice(choices, default, help_text):
    return serializers.ChoiceField(
        choices=choices, required=False, default=default, help_text=help_text
    )


def _positive(help_text, default=None):
    return serializers.IntegerField(
        min_value=1,
        required=False,
        default=default,
        allow_null=default is None,
        help_text=help_text,
    )


class MemoryEstimateRequestSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=("training", "inference"), default="training")
    model = serializers.SlugField(
        required=False,
        allow_null=True,
        default=None,
        help_text="A model architecture's slug from the catalog; or give the shape below.",
    )
    params = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        default=None,
        help_text="Parameters Ψ. Alone it is enough for model states and weights.",
    )
    layers = _positive("Transformer layers (needed for activations and the KV cache).")
    hidden_size = _positive("Hidden size h (needed for activations).")
    attention_heads = _positive("Attention heads a (needed for activations).")
    kv_heads = _positive("KV heads; below attention_heads for grouped-query attention.")
    head_dim = _positive("Head dimension; defaults to hidden_size ÷ attention_heads.")
    # Training
    precision = _choice(
        TrainingPrecision.choices,
        TRAINING_DEFAULTS["precision"],
        "16-bit and fp8 mean mixed precision with fp32 master weights.",
    )
    optimizer = _choice(Optimizer.choices, TRAINING_DEFAULTS["optimizer"], "Training optimizer.")
    zero_stage = serializers.IntegerField(min_value=0, max_value=3, default=0)
    data_parallel = _positive(
        "Data-parallel degree; derived from gpus ÷ (tensor × pipeline) when omitted, else 1."
    )
    pipeline_parallel = _positive("Pipeline-parallel degree.", default=1)
    sequence_parallel = serializers.BooleanField(default=False)
    recompute = _choice(
        Recompute.choices, TRAINING_DEFAULTS["recompute"], "Activation recomputation."
    )
    micro_batch_size = _positive("Sequences per micro-batch.", default=1)
    seq_len = _positive("Training sequence length in tokens.", default=TRAINING_DEFAULTS["seq_len"])
    # Inference
    weight_precision = _choice(
        InferencePrecision.choices, INFERENCE_DEFAULTS["weight_precision"], "Weight precision."
    )
    kv_cache_precision = _choice(
        InferencePrecision.choices, INFERENCE_DEFAULTS["kv_cache_precision"], "KV-cache precision."
    )
    context_length = _positive(
        "Tokens per sequence held in the KV cache.", default=INFERENCE_DEFAULTS["context_length"]
    )
    concurrent_sequences = _positive("Sequences served at once per replica.", default=1)
    # Both
    tensor_parallel = _positive("Tensor-parallel degree.", default=1)
    gpu_model = serializers.SlugField(
        required=False,
        allow_null=True,
        default=None,
        help_text="A GPU model's slug: adds fits, headroom and (inference) max concurrency.",
    )
    gpus = _positive("Total GPUs of the job (training).")

    def validate(self, attrs):
        if not attrs.get("model") and not attrs.get("params"):
            raise serializers.ValidationError(
                {"params": "Give either model (a catalog slug) or the shape's params."}
            )
        return attrs


class PerGpuBytesSerializer(serializers.Serializer):
    weights = serializers.IntegerField()
    gradients = serializers.IntegerField()
    optimizer_states = serializers.IntegerField()
    activations = serializers.IntegerField(allow_null=True)
    kv_cache = serializers.IntegerField()
    overhead = serializers.IntegerField()
    total = serializers.IntegerField()


class ProposalSerializer(serializers.Serializer):
    """One change that would make the estimate fit, recomputed with it."""

    change = serializers.CharField(help_text="What changes, e.g. “FP8 weights”, “H200”.")
    gpu_name = serializers.CharField()
    gpus = serializers.IntegerField(help_text="GPUs of one replica (inference) or of the job.")
    per_gpu_bytes = serializers.IntegerField(help_text="The per-GPU total after the change.")
    gpu_memory_bytes = serializers.IntegerField()
    headroom_bytes = serializers.IntegerField()
    price_per_hour_usd = serializers.FloatField(
        allow_null=True, help_text="GPUs × the catalog's reference price per GPU-hour (USD/h)."
    )
    warning = serializers.CharField(allow_blank=True)


class MemoryEstimateResponseSerializer(serializers.Serializer):
    mode = serializers.CharField()
    model = serializers.CharField(allow_null=True)
    params = serializers.IntegerField()
    active_params = serializers.IntegerField()
    settings = serializers.DictField()
    per_gpu_bytes = PerGpuBytesSerializer()
    notes = serializers.ListField(child=serializers.CharField())
    gpu_model = serializers.CharField(allow_null=True)
    gpu_memory_bytes = serializers.IntegerField(allow_null=True)
    fits = serializers.BooleanField(allow_null=True)
    headroom_bytes = serializers.IntegerField(allow_null=True)
    max_concurrent_sequences = serializers.IntegerField(allow_null=True)
    decode_tokens_per_second_ceiling = serializers.FloatField(allow_null=True)
    proposals = ProposalSerializer(
        many=True, help_text="When it does not fit on gpu_model: what would, one change each."
    )
