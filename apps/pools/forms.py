from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone as django_timezone
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from apps.clusters.forms import ClusterFieldMixin
from apps.core.forms import SectionedFormMixin, SlugFromNameMixin, TablerFormMixin
from apps.currencies.codes import USD, currency_choices
from apps.pools.models import (
    PRICE_INPUT_FIELDS,
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
from apps.pools.prices import (
    PriceStartError,
    current_hour,
    price_start_problem,
)
from apps.pools.scoped import SHARED_ONLY, limit_team_field
from apps.pools.services import save_pool

# Section titles, in the reader's language when the form is drawn.
POOL_SECTION = _("Pool")
HARDWARE_SECTION = _("Hardware")
SERVICE_PERIOD_SECTION = _("Service period")
PINNED_SOFTWARE_SECTION = _("Pinned software")
CLOUD_PRICE_SECTION = _("Cloud price")
OWNED_HARDWARE_SECTION = _("Owned hardware")
PRICES_IN_FORCE_SECTION = _("Prices in force")
REPORTS_SECTION = _("Reports")
WORKLOAD_SECTION = _("Workload")
TRAINING_SECTION = _("Training")
INFERENCE_SECTION = _("Inference")
TELEMETRY_ATTRIBUTION_SECTION = _("Telemetry attribution")

POOL_SECTIONS = (
    (
        POOL_SECTION,
        [
            "name",
            "slug",
            "purpose",
            "deployment",
            "currency",
            "provider",
            "region",
            "cluster",
            "compliance_zone",
            "owner",
            "team",
            "description",
        ],
    ),
    (HARDWARE_SECTION, ["gpu_model", "gpu_count", "gpus_per_node", "interconnect"]),
    (SERVICE_PERIOD_SECTION, ["in_service_from", "in_service_until"]),
    (PINNED_SOFTWARE_SECTION, ["driver_version", "cuda_version", "framework_versions"]),
    (
        CLOUD_PRICE_SECTION,
        [
            "on_demand_price_per_gpu_hour_usd",
            "reserved_price_per_gpu_hour_usd",
            "reserved_term_months",
        ],
    ),
    (
        OWNED_HARDWARE_SECTION,
        [
            "purchase_price_per_gpu_usd",
            "amortisation_months",
            "power_price_per_kwh_usd",
            "pue",
            "operations_per_month_usd",
            "colocation_per_month_usd",
        ],
    ),
    (REPORTS_SECTION, ["timezone", "peak_hours"]),
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


class PoolForm(
    ClusterFieldMixin, TablerFormMixin, SlugFromNameMixin, SectionedFormMixin, forms.ModelForm
):
    sections = POOL_SECTIONS

    price_effective_from = forms.DateTimeField(
        label=_("Prices in force from"),
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text=_(
            "The hour edited prices take effect from; the hours before keep their price. "
            "Empty: the current hour; a future hour schedules the change."
        ),
    )

    # Matched on the untranslated titles (SectionedFormMixin), so they hold in any language.
    section_conditions = {
        "Cloud price": ("deployment", CLOUD_DEPLOYMENTS),
        "Owned hardware": ("deployment", OWNED_DEPLOYMENTS),
    }

    class Meta:
        model = Pool
        fields = [name for _title, names in POOL_SECTIONS for name in names]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "in_service_from": forms.DateTimeInput(
                attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"
            ),
            "in_service_until": forms.DateTimeInput(
                attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"
            ),
        }

    def __init__(self, *args, scope=SHARED_ONLY, user=None, **kwargs):
        """``scope``: the editing user's (apps/accounts/scope.py); the team choices are
        its teams and none. ``user``: who a price change is recorded as made by."""
        super().__init__(*args, **kwargs)
        self.user = user
        if self.instance.pk:
            # Read before the form copies the edited values onto the instance.
            self.prices_before = Pool(
                **{name: getattr(self.instance, name) for name in PRICE_INPUT_FIELDS}
            )
            self.fields["price_effective_from"].initial = current_hour()
            position = [title for title, _names in POOL_SECTIONS].index(OWNED_HARDWARE_SECTION)
            self.sections = (
                *POOL_SECTIONS[: position + 1],
                (PRICES_IN_FORCE_SECTION, ["price_effective_from"]),
                *POOL_SECTIONS[position + 1 :],
            )
        else:
            # A new pool's prices run from its service start.
            del self.fields["price_effective_from"]
        limit_team_field(self.fields["team"], scope, empty_label=gettext("Shared (no team)"))
        self.fields["currency"] = forms.TypedChoiceField(
            label=self.fields["currency"].label,
            choices=currency_choices(),
            initial=self.instance.currency or USD,
            # Left out of a post: the pool's currency stays as it is (USD for a new pool).
            required=False,
            help_text=gettext(
                "The currency the prices below are typed in; costs are converted at each "
                "month's exchange rate."
            ),
        )
        # The price fields are in the pool's currency, whatever their stored names say.
        for name in PRICE_INPUT_FIELDS:
            field = self.fields.get(name)
            if field is not None and "(USD)" in str(field.label):
                field.label = str(field.label).replace("(USD)", gettext("(pool currency)"))
        self.fields["timezone"].required = False  # left empty: UTC, as the model defaults
        # Left empty: from now on, as a pool registered today starts being paid today.
        self.fields["in_service_from"].required = False
        zone = django_timezone.get_current_timezone_name()
        for name in ("in_service_from", "in_service_until"):
            self.fields[name].help_text = gettext("%(help)s Date and time in %(zone)s.") % {
                "help": self.fields[name].help_text,
                "zone": zone,
            }

    def clean_currency(self):
        return self.cleaned_data.get("currency") or self.instance.currency or USD

    def clean_timezone(self):
        return self.cleaned_data.get("timezone") or "UTC"

    def clean_team(self):
        team = self.cleaned_data.get("team")
        problem = pool_team_problem(self.instance, team)
        if problem:
            raise ValidationError(problem)
        return team

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
                gettext(
                    "%(gpus)s GPUs do not fill whole nodes of %(per_node)s: use a multiple of "
                    "%(per_node)s, or change GPUs per node."
                )
                % {"gpus": gpu_count, "per_node": gpus_per_node},
            )
        service_problem = service_period_problem(
            cleaned.get("in_service_from"), cleaned.get("in_service_until")
        )
        if service_problem:
            self.add_error("in_service_until", service_problem)
        self._clean_price_start(cleaned)
        deployment = cleaned.get("deployment")
        for name in REQUIRED_COST_FIELDS.get(deployment, []):
            if cleaned.get(name) is None and name not in self.errors:
                label = self.fields[name].label
                self.add_error(
                    name,
                    gettext(
                        "%(field)s is needed for a %(deployment)s pool to have an effective price."
                    )
                    % {"field": label, "deployment": str(Deployment(deployment).label).lower()},
                )
        return cleaned

    def _clean_price_start(self, cleaned):
        if "price_effective_from" not in self.fields or "price_effective_from" in self.errors:
            return
        start = cleaned.get("price_effective_from") or current_hour()
        cleaned["price_effective_from"] = start
        problem = price_start_problem(
            self.instance, start, cleaned.get("in_service_from") or self.instance.in_service_from
        )
        if problem:
            self.add_error("price_effective_from", problem)

    def save(self, commit=True):
        pool = super().save(commit=False)
        if not commit:
            return pool
        try:
            return save_pool(
                pool,
                price_history=True,
                prices_from=self.cleaned_data.get("price_effective_from"),
                prices_before=getattr(self, "prices_before", None),
                user=self.user,
            )
        except PriceStartError as error:  # checked in clean(); raced by another edit
            raise ValidationError(str(error)) from error


WORKLOAD_SECTIONS = (
    (
        WORKLOAD_SECTION,
        [
            "name",
            "slug",
            "kind",
            "model_architecture",
            "pool",
            "gpu_count",
            "status",
            "owner",
            "team",
            "description",
        ],
    ),
    (
        TRAINING_SECTION,
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
            "reference_step_seconds",
        ],
    ),
    (
        INFERENCE_SECTION,
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
    (TELEMETRY_ATTRIBUTION_SECTION, ["k8s_namespace", "pod_name_prefix"]),
)


def pool_team_problem(pool, team) -> str | None:
    """Why ``pool`` (saved or not) cannot be given to ``team``, or None: workloads of
    another team run on it. A pool's workloads are its team's or have none (the rule
    ``workload_team_problem`` keeps from the workload's side). One rule for the form and
    the API."""
    if team is None or pool.pk is None:
        return None
    others = pool.workloads.exclude(team=None).exclude(team=team).count()
    if not others:
        return None
    return ngettext(
        "%(count)s workload on this pool belongs to another team: a pool's workloads are "
        "its team's or have no team. Move it first.",
        "%(count)s workloads on this pool belong to other teams: a pool's workloads are "
        "its team's or have no team. Move them first.",
        others,
    ) % {"count": others}


def archived_pool_error(pool, current_pool_id=None) -> str | None:
    """Why a workload cannot be placed on ``pool``, or None: an archived pool keeps the
    workloads already on it (``current_pool_id``) but takes no new ones. One rule for
    the form and the API."""
    if pool is None or not pool.is_archived or pool.pk == current_pool_id:
        return None
    return gettext(
        "The pool %(name)s is archived: restore it first, or choose a pool that is not archived."
    ) % {"name": pool.name}


class WorkloadPoolField(forms.ModelChoiceField):
    """Offers its queryset (the pools a workload may be placed on) and refuses an
    archived pool by name, with what to do, rather than as an unknown choice; only the
    archived pools the form names (``archived_pools``, those in the user's scope) are
    named: any other pool is an unknown choice."""

    archived_pools = Pool.objects.none()

    def to_python(self, value):
        try:
            return super().to_python(value)
        except ValidationError as unknown:
            pool = self.archived_pools.filter(pk=_as_pk(value)).first()
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
        fields = [name for _title, names in WORKLOAD_SECTIONS for name in names]
        field_classes = {"pool": WorkloadPoolField}
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, scope=SHARED_ONLY, **kwargs):
        """``scope``: the editing user's (apps/accounts/scope.py); the pools offered are
        those in it, the team choices its teams and none (the pool's team)."""
        super().__init__(*args, **kwargs)
        limit_team_field(self.fields["team"], scope, empty_label=gettext("The pool's team"))
        # Archived pools are not offered, except the one the workload already runs on,
        # which it keeps until it is moved.
        pools = Pool.objects.in_scope(scope)
        self.fields["pool"].queryset = pools.filter(
            Q(archived_at__isnull=True) | Q(pk=self.instance.pool_id)
        )
        self.fields["pool"].archived_pools = pools.archived()

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
                gettext("The pool %(name)s has %(pool_gpus)s GPUs; a workload cannot use %(gpus)s.")
                % {"name": pool.name, "pool_gpus": pool.gpu_count, "gpus": gpu_count},
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
                    gettext(
                        "Tensor × pipeline parallel = %(model_parallel)s does not divide the "
                        "%(gpus)s GPUs."
                    )
                    % {"model_parallel": model_parallel, "gpus": gpu_count},
                )
            )
        elif data * model_parallel != gpu_count:
            errors.append(
                (
                    "data_parallel",
                    gettext(
                        "Data × tensor × pipeline parallel = %(data)s × %(tensor)s × "
                        "%(pipeline)s = %(product)s, but the workload uses %(gpus)s GPUs: set "
                        "data parallel to %(wanted)s."
                    )
                    % {
                        "data": data,
                        "tensor": tensor,
                        "pipeline": pipeline,
                        "product": data * model_parallel,
                        "gpus": gpu_count,
                        "wanted": gpu_count // model_parallel,
                    },
                )
            )
        architecture = values.get("model_architecture")
        if architecture and tensor > 1 and architecture.attention_heads % tensor:
            errors.append(
                (
                    "tensor_parallel",
                    gettext("%(heads)s attention heads cannot be split over %(tensor)s GPUs.")
                    % {"heads": architecture.attention_heads, "tensor": tensor},
                )
            )
    if kind and kind not in TRAINING_KINDS and gpu_count:
        tensor = values.get("inference_tensor_parallel") or 1
        if gpu_count % tensor:
            errors.append(
                (
                    "inference_tensor_parallel",
                    gettext("%(gpus)s GPUs do not make whole replicas of %(tensor)s GPUs.")
                    % {"gpus": gpu_count, "tensor": tensor},
                )
            )
        architecture = values.get("model_architecture")
        if architecture and architecture.kv_heads % tensor and tensor % architecture.kv_heads:
            errors.append(
                (
                    "inference_tensor_parallel",
                    gettext("%(kv_heads)s KV heads cannot be split evenly over %(tensor)s GPUs.")
                    % {"kv_heads": architecture.kv_heads, "tensor": tensor},
                )
            )
    return errors


class CalculatorForm(TablerFormMixin, forms.Form):
    """The what-if calculator: the estimate API's inputs as a form (nothing is saved)."""

    mode = forms.ChoiceField(
        label=_("Mode"), choices=[("training", _("Training")), ("inference", _("Inference"))]
    )
    model = forms.ModelChoiceField(
        queryset=None,
        required=False,
        to_field_name="slug",
        empty_label=_("Custom shape…"),
        label=_("Model architecture"),
    )
    params = forms.IntegerField(min_value=1, required=False, label=_("Parameters"))
    layers = forms.IntegerField(min_value=1, required=False, label=_("Layers"))
    hidden_size = forms.IntegerField(min_value=1, required=False, label=_("Hidden size"))
    attention_heads = forms.IntegerField(min_value=1, required=False, label=_("Attention heads"))
    kv_heads = forms.IntegerField(min_value=1, required=False, label=_("KV heads"))
    head_dim = forms.IntegerField(min_value=1, required=False, label=_("Head dim"))
    gpu_model = forms.ModelChoiceField(
        queryset=None,
        required=False,
        to_field_name="slug",
        label=_("GPU model"),
        empty_label=_("No GPU (memory only)"),
    )
    gpus = forms.IntegerField(
        min_value=1,
        required=False,
        label=_("GPUs (training job)"),
        help_text=_("Sets data parallel = GPUs ÷ (tensor × pipeline)."),
    )
    tensor_parallel = forms.IntegerField(min_value=1, initial=1, label=_("Tensor parallel"))
    precision = forms.ChoiceField(
        choices=TrainingPrecision.choices, initial="bf16", label=_("Precision")
    )
    optimizer = forms.ChoiceField(choices=Optimizer.choices, initial="adamw", label=_("Optimizer"))
    zero_stage = forms.TypedChoiceField(
        choices=[(stage, f"ZeRO-{stage}") for stage in range(4)],
        coerce=int,
        initial=0,
        label=_("ZeRO stage"),
    )
    data_parallel = forms.IntegerField(min_value=1, required=False, label=_("Data parallel"))
    pipeline_parallel = forms.IntegerField(min_value=1, initial=1, label=_("Pipeline parallel"))
    sequence_parallel = forms.BooleanField(required=False, label=_("Sequence parallel"))
    recompute = forms.ChoiceField(choices=Recompute.choices, initial="none", label=_("Recompute"))
    micro_batch_size = forms.IntegerField(min_value=1, initial=1, label=_("Micro batch size"))
    seq_len = forms.IntegerField(min_value=1, initial=4096, label=_("Sequence length (tokens)"))
    weight_precision = forms.ChoiceField(
        choices=InferencePrecision.choices, initial="bf16", label=_("Weight precision")
    )
    kv_cache_precision = forms.ChoiceField(
        choices=InferencePrecision.choices, initial="bf16", label=_("KV-cache precision")
    )
    context_length = forms.IntegerField(min_value=1, initial=4096, label=_("Context (tokens)"))
    concurrent_sequences = forms.IntegerField(
        min_value=1, initial=8, label=_("Concurrent sequences")
    )

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
            self.add_error(
                "params", gettext("Choose a model architecture, or give the parameter count.")
            )
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
