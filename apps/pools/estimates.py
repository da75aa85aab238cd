"""The memory estimate behind the what-if calculator and ``POST /api/v1/estimates/memory/``:
validated inputs (the API's names) in, a plain dict out. The maths is memory.py's."""

from apps.catalog.models import GpuModel, ModelArchitecture
from apps.core.sentences import gettext_noop, sentence
from apps.pools import memory
from apps.pools.proposals import propose

SHAPE_FIELDS = ("params", "layers", "hidden_size", "attention_heads", "kv_heads", "head_dim")
TRAINING_DEFAULTS = {
    "precision": "bf16",
    "optimizer": "adamw",
    "zero_stage": 0,
    "data_parallel": 1,
    "tensor_parallel": 1,
    "pipeline_parallel": 1,
    "sequence_parallel": False,
    "recompute": "none",
    "micro_batch_size": 1,
    "seq_len": 4096,
}
INFERENCE_DEFAULTS = {
    "weight_precision": "bf16",
    "kv_cache_precision": "bf16",
    "context_length": 4096,
    "concurrent_sequences": 1,
    "tensor_parallel": 1,
}


class EstimateError(ValueError):
    """Bad input, with the field it concerns (None when it concerns several)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def _message_of(error: ValueError) -> str:
    """The error's message as raised: a ``Sentence`` stays one, for the page to translate."""
    return error.args[0] if len(error.args) == 1 else str(error)


def _field_named_in(message: str, candidates) -> str | None:
    first_word = message.split(" ", 1)[0]
    return first_word if first_word in candidates else None


def resolve_shape(data: dict) -> tuple[memory.ModelShape, ModelArchitecture | None]:
    architecture = data.get("model")
    if isinstance(architecture, str):
        architecture = ModelArchitecture.objects.filter(slug=architecture).first()
        if architecture is None:
            raise EstimateError(
                sentence(
                    gettext_noop("No model architecture with slug “%(slug)s”."), slug=data["model"]
                ),
                "model",
            )
    if architecture is not None:
        from apps.pools.assessment import shape_of

        return shape_of(architecture), architecture
    if not data.get("params"):
        raise EstimateError(
            sentence(gettext_noop("Give either model (a catalog slug) or the shape's params.")),
            "params",
        )
    try:
        shape = memory.ModelShape(**{name: data.get(name) for name in SHAPE_FIELDS})
    except ValueError as error:
        raise EstimateError(
            _message_of(error), _field_named_in(str(error), SHAPE_FIELDS)
        ) from error
    return shape, None


def run_memory_estimate(data: dict) -> dict:
    """``data`` uses the API's field names; missing settings take the documented defaults."""
    mode = data.get("mode", "training")
    shape, architecture = resolve_shape(data)
    gpu_model = data.get("gpu_model")
    if isinstance(gpu_model, str):
        gpu_model = GpuModel.objects.filter(slug=gpu_model).first()
        if gpu_model is None:
            raise EstimateError(
                sentence(
                    gettext_noop("No GPU model with slug “%(slug)s”."), slug=data["gpu_model"]
                ),
                "gpu_model",
            )
    defaults = TRAINING_DEFAULTS if mode == "training" else INFERENCE_DEFAULTS
    settings_values = {
        name: data[name] if data.get(name) is not None else default
        for name, default in defaults.items()
    }
    gpus = data.get("gpus")
    if mode == "training" and gpus and data.get("data_parallel") is None:
        model_parallel = settings_values["tensor_parallel"] * settings_values["pipeline_parallel"]
        if gpus % model_parallel:
            raise EstimateError(
                sentence(
                    gettext_noop(
                        "gpus (%(gpus)s) is not a multiple of tensor × pipeline parallel "
                        "(%(model_parallel)s)."
                    ),
                    gpus=gpus,
                    model_parallel=model_parallel,
                ),
                "gpus",
            )
        settings_values["data_parallel"] = gpus // model_parallel
    try:
        if mode == "training":
            settings = memory.TrainingSettings(**settings_values)
            breakdown = memory.training_memory_per_gpu(shape, settings)
        else:
            settings = memory.InferenceSettings(**settings_values)
            breakdown = memory.inference_memory_per_gpu(shape, settings)
    except ValueError as error:
        raise EstimateError(_message_of(error), _field_named_in(str(error), defaults)) from error

    result = {
        "mode": mode,
        "model": architecture.slug if architecture else None,
        "params": shape.params,
        "active_params": shape.effective_active_params,
        "settings": settings_values,
        "per_gpu_bytes": breakdown.as_dict(),
        "notes": list(breakdown.notes),
        "gpu_model": gpu_model.slug if gpu_model else None,
        "gpu_memory_bytes": gpu_model.memory_bytes if gpu_model else None,
        "fits": None,
        "headroom_bytes": None,
        "max_concurrent_sequences": None,
        "decode_tokens_per_second_ceiling": None,
        "proposals": [],
        "breakdown": breakdown,  # for the calculator page; the API serializer drops it
        "gpu": gpu_model,
    }
    if gpu_model is not None:
        result["fits"] = memory.fits(breakdown, gpu_model.memory_bytes)
        result["headroom_bytes"] = memory.headroom_bytes(breakdown, gpu_model.memory_bytes)
        if not result["fits"]:
            result["proposals"] = propose(shape, mode, settings, gpu_model, GpuModel.objects.all())
        if mode == "inference" and shape.has_kv_shape:
            result["max_concurrent_sequences"] = memory.max_concurrent_sequences(
                shape, settings, gpu_model.memory_bytes
            )
            result["decode_tokens_per_second_ceiling"] = memory.decode_tokens_per_second_ceiling(
                shape, settings, gpu_model.memory_bandwidth_bytes_per_second
            )
    return result
