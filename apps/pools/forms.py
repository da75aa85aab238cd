from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone as django_timezone

from apps.core.forms import SectionedFormMixin, SlugFromNameMixin, TablerFormMixin
from apps.pools.models import (
    TRAINING_KINDS,
    Deployment,
    InferencePrecision,
    Optimizer,
    Pool,
    Recompute,
    TrainingPrecision,
    Workload,
    WorkloadKind,
    service_period_problem,
)

POOL_SECTIONS = (
    (
        "Pool",
        [
            "name",
            "slug",
            "purpose",
            "deployment",
            "provider",
            "region",
            "compliance_zone",
            "owner",
            "description",
        ],
    ),
    ("Hardware", ["gpu_model", "gpu_count", "gpus_per_node", "interconnect"]),
    ("Service period", ["in_service_from", "in_service_until"]),
    ("Pinned software", ["driver_version", "cuda_version", "framework_versions"]),
    (
        "Cloud price",
        [
            "on_demand_price_per_gpu_hour_usd",
            "reserved_price_per_gpu_hour_usd",
            "reserved_term_months",
        ],
    ),
    (
        "Owned hardware",
        [
            "purchase_price_per_gpu_usd",
            "amortisation_months",
            "power_price_per_kwh_usd",
            "pue",
            "operations_per_month_usd",
            "colocation_per_month_usd",
        ],
    ),
    ("Reports", ["timezone", "peak_hours"]),
)

CLOUD_DEPLOYMENTS = (Deployment.CLOUD_ON_DEMAND, Deployment.CLOUD_RESERVED)
OWNED_DEPLOYMENTS = (Deployment.BARE_METAL, Deployment.ON_PREMISES)

# What each deployment must be given to have an effective price.
REQUIRED_COST_FIELDS = {
    Deployment.CLOUD_ON_DEMAND: ["on_demand_price_per_gpu_hour_usd"],
    Deployment.CLOUD_RESERVED: ["reserved_price_per_gpu_hour_usd", "reserved_term_months"],
    Deployment.BARE_METAL: [
        "purchase_price_per_gpu_usd",
        "amortisation_months",
        "power_price_per_kwh_usd",
        "pue",
    ],
    Deployment.ON_PREMISES: [
        "purchase_price_per_gpu_usd",
        "amortisation_months",
        "power_price_per_kwh_usd",
        "pue",
    ],
}


class PoolForm(TablerFormMixin, SlugFromNameMixin, SectionedFormMixin, forms.ModelForm):
    sections = POOL_SECTIONS
    section_conditions = {
        "Cloud price": ("deployment", CLOUD_DEPLOYMENTS),
        "Owned hardware": ("deployment", OWNED_DEPLOYMENTS),
    }

    class Meta:
        model = Pool
        fields = [name for _, names in POOL_SECTIONS for name in names]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "in_service_from": forms.DateTimeInput(
                attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"
            ),
            "in_service_until": forms.DateTimeInput(
                attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"
            ),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["timezone"].required = False  # left empty: UTC, as the model defaults
        # Left empty: from now on, as a pool registered today starts being paid today.
        self.fields["in_service_from"].required = False
        zone = django_timezone.get_current_timezone_name()
        for name in ("in_service_from", "in_service_until"):
            self.fields[name].help_text += f" Date and time in {zone}."

    def clean_timezone(self):
        return self.cleaned_data.get("timezone") or "UTC"

    def clean_in_service_from(self):
        return self.cleaned_data.get("in_service_from") or (
            self.instance.in_service_from if self.instance.pk else django_timezone.now()
        )

    def clean(self):
        cleaned = super().clean()
        gpu_count, gpus_per_node = cleaned.get("gpu_count"), cleaned.get("gpus_per_node")
        if gpu_count and gpus_per_node and gpu_count % gpus_per_node:
            self.add_error(
                "gpu_count",
                f"{gpu_count} GPUs do not fill whole nodes of {gpus_per_node}: "
                f"use a multiple of {gpus_per_node}, or change GPUs per node.",
            )
        service_problem = service_period_problem(
            cleaned.get("in_service_from"), cleaned.get("in_service_until")
        )
        if service_problem:
            self.add_error("in_service_until", service_problem)
        deployment = cleaned.get("deployment")
        for name in REQUIRED_COST_FIELDS.get(deployment, []):
            if cleaned.get(name) is None and name not in self.errors:
                label = self.fields[name].label
                self.add_error(
                    name,
                    f"{label} is needed for a {Deployment(deployment).label.lower()} pool "
                    "to have an effective price.",
                )
        return cleaned

    def save(self, commit=True):
        pool = super().save(commit=False)
        pool.refresh_effective_price()
        if commit:
            pool.save()
        return pool


WORKLOAD_SECTIONS = (
    (
        "Workload",
        [
            "name",
            "slug",
            "kind",
            "model_architecture",
            "pool",
            "gpu_count",
            "status",
            "owner",
            "description",
        ],
    ),
    (
        "Training",
        [
            "precision",
            "optimizer",
            "zero_stage",
            "data_parallel",
            "tensor_parallel",
            "pipeline_parallel",
            "sequence_parallel",
            "recompute",
            "micro_batch_size",
            "seq_len",
            "tokens_to_train",
            "expected_mfu",
            "checkpoint_interval_minutes",
            "checkpoint_write_seconds",
        ],
    ),
    (
        "Inference",
        [
            "weight_precision",
            "kv_cache_precision",
            "context_length",
            "concurrent_sequences",
            "inference_tensor_parallel",
            "target_ttft_ms",
            "target_p95_latency_ms",
            "expected_peak_requests_per_second",
            "quantization_validated",
        ],
    ),
    ("Telemetry attribution", ["k8s_namespace", "pod_name_prefix"]),
)


def archived_pool_error(pool, current_pool_id=None) -> str | None:
    """Why a workload cannot be placed on ``pool``, or None: an archived pool keeps the
    workloads already on it (``current_pool_id``) but takes no new ones. One rule for
    the form and the API."""
    if pool is None or not pool.is_archived or pool.pk == current_pool_id:
        return None
    return (
        f"The pool {pool.name} is archived: restore it first, or choose a pool that is not "
        "archived."
    )


class WorkloadPoolField(forms.ModelChoiceField):
    """Offers its queryset (the pools a workload may be placed on) and refuses an
    archived pool by name, with what to do, rather than as an unknown choice."""

    def to_python(self, value):
        try:
            return super().to_python(value)
        except ValidationError as unknown:
            pool = Pool.objects.archived().filter(pk=_as_pk(value)).first()
            if pool is None:
                raise unknown from None
            raise ValidationError(archived_pool_error(pool), code="archived") from None


def _as_pk(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class WorkloadForm(TablerFormMixin, SlugFromNameMixin, SectionedFormMixin, forms.ModelForm):
    sections = WORKLOAD_SECTIONS
    section_conditions = {
        "Training": ("kind", sorted(TRAINING_KINDS)),
        "Inference": ("kind", [kind for kind in WorkloadKind.values if kind not in TRAINING_KINDS]),
    }

    class Meta:
        model = Workload
        fields = [name for _, names in WORKLOAD_SECTIONS for name in names]
        field_classes = {"pool": WorkloadPoolField}
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Archived pools are not offered, except the one the workload already runs on,
        # which it keeps until it is moved.
        self.fields["pool"].queryset = Pool.objects.filter(
            Q(archived_at__isnull=True) | Q(pk=self.instance.pool_id)
        )

    def clean(self):
        cleaned = super().clean()
        errors = workload_consistency_errors(cleaned)
        for field, message in errors:
            if field not in self.errors:
                self.add_error(field, message)
        return cleaned


def workload_consistency_errors(values: dict) -> list[tuple[str, str]]:
    """Cross-field rules shared by the form and the API serializer: (field, message)."""
    errors = []
    pool, gpu_count, kind = values.get("pool"), values.get("gpu_count"), values.get("kind")
    if pool and gpu_count and gpu_count > pool.gpu_count:
        errors.append(
            (
                "gpu_count",
                f"The pool {pool.name} has {pool.gpu_count} GPUs; "
                f"a workload cannot use {gpu_count}.",
            )
        )
    if kind in TRAINING_KINDS and gpu_count:
        data = values.get("data_parallel") or 1
        tensor = values.get("tensor_parallel") or 1
        pipeline = values.get("pipeline_parallel") or 1
        model_parallel = tensor * pipeline
        if gpu_count % model_parallel:
            errors.append(
                (
                    "tensor_parallel",
                    f"Tensor × pipeline parallel = {model_parallel} does not "
                    f"divide the {gpu_count} GPUs.",
                )
            )
        elif data * model_parallel != gpu_count:
            errors.append(
                (
                    "data_parallel",
                    f"Data × tensor × pipeline parallel = {data} × {tensor} × "
                    f"{pipeline} = {data * model_parallel}, but the workload uses "
                    f"{gpu_count} GPUs: set data parallel to "
                    f"{gpu_count // model_parallel}.",
                )
            )
        architecture = values.get("model_architecture")
        if architecture and tensor > 1 and architecture.attention_heads % tensor:
            errors.append(
                (
                    "tensor_parallel",
                    f"{architecture.attention_heads} attention heads cannot be "
                    f"split over {tensor} GPUs.",
                )
            )
    if kind and kind not in TRAINING_KINDS and gpu_count:
        tensor = values.get("inference_tensor_parallel") or 1
        if gpu_count % tensor:
            errors.append(
                (
                    "inference_tensor_parallel",
                    f"{gpu_count} GPUs do not make whole replicas of {tensor} GPUs.",
                )
            )
        architecture = values.get("model_architecture")
        if architecture and architecture.kv_heads % tensor and tensor % architecture.kv_heads:
            errors.append(
                (
                    "inference_tensor_parallel",
                    f"{architecture.kv_heads} KV heads cannot be split evenly over {tensor} GPUs.",
                )
            )
    return errors


class CalculatorForm(TablerFormMixin, forms.Form):
    """The what-if calculator: the estimate API's inputs as a form (nothing is saved)."""

    mode = forms.ChoiceField(choices=[("training", "Training"), ("inference", "Inference")])
    model = forms.ModelChoiceField(
        queryset=None,
        required=False,
        to_field_name="slug",
        empty_label="Custom shape…",
        label="Model architecture",
    )
    params = forms.IntegerField(min_value=1, required=False, label="Parameters")
    layers = forms.IntegerField(min_value=1, required=False)
    hidden_size = forms.IntegerField(min_value=1, required=False)
    attention_heads = forms.IntegerField(min_value=1, required=False)
    kv_heads = forms.IntegerField(min_value=1, required=False, label="KV heads")
    head_dim = forms.IntegerField(min_value=1, required=False)
    gpu_model = forms.ModelChoiceField(
        queryset=None,
        required=False,
        to_field_name="slug",
        label="GPU model",
        empty_label="No GPU (memory only)",
    )
    gpus = forms.IntegerField(
        min_value=1,
        required=False,
        label="GPUs (training job)",
        help_text="Sets data parallel = GPUs ÷ (tensor × pipeline).",
    )
    tensor_parallel = forms.IntegerField(min_value=1, initial=1, label="Tensor parallel")
    precision = forms.ChoiceField(choices=TrainingPrecision.choices, initial="bf16")
    optimizer = forms.ChoiceField(choices=Optimizer.choices, initial="adamw")
    zero_stage = forms.TypedChoiceField(
        choices=[(stage, f"ZeRO-{stage}") for stage in range(4)],
        coerce=int,
        initial=0,
        label="ZeRO stage",
    )
    data_parallel = forms.IntegerField(min_value=1, required=False, label="Data parallel")
    pipeline_parallel = forms.IntegerField(min_value=1, initial=1, label="Pipeline parallel")
    sequence_parallel = forms.BooleanField(required=False)
    recompute = forms.ChoiceField(choices=Recompute.choices, initial="none")
    micro_batch_size = forms.IntegerField(min_value=1, initial=1)
    seq_len = forms.IntegerField(min_value=1, initial=4096, label="Sequence length (tokens)")
    weight_precision = forms.ChoiceField(choices=InferencePrecision.choices, initial="bf16")
    kv_cache_precision = forms.ChoiceField(
        choices=InferencePrecision.choices, initial="bf16", label="KV-cache precision"
    )
    context_length = forms.IntegerField(min_value=1, initial=4096, label="Context (tokens)")
    concurrent_sequences = forms.IntegerField(min_value=1, initial=8)

    shape_fields = ("params", "layers", "hidden_size", "attention_heads", "kv_heads", "head_dim")
    training_fields = (
        "precision",
        "optimizer",
        "zero_stage",
        "data_parallel",
        "pipeline_parallel",
        "sequence_parallel",
        "recompute",
        "micro_batch_size",
        "seq_len",
    )
    inference_fields = (
        "weight_precision",
        "kv_cache_precision",
        "context_length",
        "concurrent_sequences",
    )

    def __init__(self, *args, **kwargs):
        from apps.catalog.models import GpuModel, ModelArchitecture

        self.base_fields["model"].queryset = ModelArchitecture.objects.order_by("family", "name")
        self.base_fields["gpu_model"].queryset = GpuModel.objects.order_by("vendor", "name")
        super().__init__(*args, **kwargs)

    def grouped(self, names):
        return [self[name] for name in names]

    def clean(self):
        cleaned = super().clean()
        if not cleaned.get("model") and not cleaned.get("params"):
            self.add_error("params", "Choose a model architecture, or give the parameter count.")
        return cleaned

    @classmethod
    def with_defaults(cls, values: dict) -> "CalculatorForm":
        """A bound form: each field's initial value unless ``values`` gives one."""
        data = {name: field.initial for name, field in cls.base_fields.items()}
        data.update({name: value for name, value in values.items() if value is not None})
        return cls({name: value for name, value in data.items() if value is not None})

    @classmethod
    def initial_from_workload(cls, workload) -> dict:
        values = {
            "mode": "training" if workload.is_training else "inference",
            "model": workload.model_architecture.slug if workload.model_architecture else None,
            "gpu_model": workload.pool.gpu_model.slug,
        }
        if workload.is_training:
            values["gpus"] = workload.gpu_count
            values["tensor_parallel"] = workload.tensor_parallel
            values.update({name: getattr(workload, name) for name in cls.training_fields})
        else:
            values["tensor_parallel"] = workload.inference_tensor_parallel
            values.update({name: getattr(workload, name) for name in cls.inference_fields})
        return values
