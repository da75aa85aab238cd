from decimal import Decimal

from django import forms
from django.db import transaction
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.accounts.scope import scope_of
from apps.catalog.models import GpuModel
from apps.core.bounds import PLAIN_NUMBER, Scale, number_text_error
from apps.core.forms import SectionedFormMixin, SlugFromNameMixin, TablerFormMixin
from apps.core.texts import translated
from apps.pools.models import Pool, Workload
from apps.pools.scoped import SHARED_ONLY, limit_team_field
from apps.procurement.comparison.options import MONEY_FIELDS, pool_value
from apps.procurement.comparison.regions import RttParseError, parse_rtt_ms
from apps.procurement.comparison.services import save_option_rtts, save_user_regions
from apps.procurement.comparison.skypilot import PriceCatalogError, parse_price_catalog
from apps.procurement.comparison.what_if import apply_what_if
from apps.procurement.models import (
    ComparisonExport,
    DemandSource,
    LineType,
    OptionKind,
    Scenario,
    ScenarioOption,
    ThroughputBasis,
)

TRAINING_JOB_SECTION = _("Training job")
SCENARIO_SECTIONS = (
    (
        _("Scenario"),
        [
            "name",
            "slug",
            "description",
            "team",
            "horizon_months",
            "currency",
            "usd_exchange_rate",
        ],
    ),
    (
        _("Demand"),
        [
            "demand_source",
            "demand_pool",
            "demand_workload",
            "window_days",
            "entered_gpu_hours_per_month",
            "entered_hourly_profile",
        ],
    ),
    (
        _("Reference and throughput"),
        ["reference_gpu_model", "reference_efficiency", "compute_precision", "model_architecture"],
    ),
    (TRAINING_JOB_SECTION, ["training_tokens", "training_gpus"]),
    (
        _("Requirements"),
        [
            "user_regions_text",
            "min_ddos_protection_gbps",
            "accepted_line_types",
            "min_ip_address_count",
            "no_icp_filing",
        ],
    ),
)
# Fields of the sections that are not on the model.
SCENARIO_FORM_ONLY_FIELDS = {"user_regions_text"}

# What UserRegion.max_rtt_ms holds: 7 digits, one after the point.
MAX_RTT_MS = Decimal("999999.9")


def parse_user_regions(text: str) -> list[tuple[str, Decimal | None]]:
    """One region a line, “name: maximum RTT in ms” or just “name”; raises
    ValidationError naming the line and what was expected."""
    found = []
    seen = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        name, colon, limit = line.rpartition(":")
        if not colon:
            name, limit = line, ""
        name, limit = name.strip(), limit.strip().removesuffix("ms").strip()
        if not name:
            raise forms.ValidationError(
                gettext("Line %(line)s: a region needs a name before the colon.") % {"line": number}
            )
        max_rtt_ms = None
        if limit:
            # Read as every number field of the app reads its text (apps/core/bounds.py):
            # no exponent, NaN or infinity, a decimal point, never a decimal comma.
            if number_text_error(limit, translate=gettext) or not PLAIN_NUMBER.fullmatch(limit):
                raise forms.ValidationError(
                    gettext(
                        "Line %(line)s: “%(limit)s” is not a number of milliseconds "
                        "(expected e.g. “Shanghai users: 60”)."
                    )
                    % {"line": number, "limit": limit}
                )
            max_rtt_ms = Decimal(limit)
            if max_rtt_ms < 0:
                raise forms.ValidationError(
                    gettext("Line %(line)s: the maximum RTT cannot be negative.") % {"line": number}
                )
            if max_rtt_ms > MAX_RTT_MS or max_rtt_ms != max_rtt_ms.quantize(Decimal("0.1")):
                raise forms.ValidationError(
                    gettext("Line %(line)s: the maximum RTT is at most %(maximum)s ms, to 0.1 ms.")
                    % {"line": number, "maximum": f"{MAX_RTT_MS:,}"}
                )
        if len(name) > 80:
            raise forms.ValidationError(
                gettext("Line %(line)s: a region name has at most 80 characters.")
                % {"line": number}
            )
        if name.casefold() in seen:
            raise forms.ValidationError(
                gettext("Line %(line)s: “%(name)s” is named twice.")
                % {"line": number, "name": name}
            )
        seen.add(name.casefold())
        found.append((name, max_rtt_ms))
    return found


def parse_profile(text: str) -> list[float]:
    """24 comma-separated weights; raises ValidationError naming what is wrong."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != 24:
        raise forms.ValidationError(
            gettext("Give 24 weights, one per hour from 0 to 23 (got %(count)s).")
            % {"count": len(parts)}
        )
    weights = []
    for hour, part in enumerate(parts):
        try:
            weight = float(part)
        except ValueError:
            raise forms.ValidationError(
                gettext("Hour %(hour)s: “%(part)s” is not a number.") % {"hour": hour, "part": part}
            ) from None
        if weight < 0:
            raise forms.ValidationError(
                gettext("Hour %(hour)s: a weight cannot be negative.") % {"hour": hour}
            )
        weights.append(weight)
    if not any(weights):
        raise forms.ValidationError(gettext("At least one hour needs a weight above 0."))
    return weights


class ScenarioForm(TablerFormMixin, SlugFromNameMixin, SectionedFormMixin, forms.ModelForm):
    sections = SCENARIO_SECTIONS

    # Matched on the untranslated title (SectionedFormMixin), so it holds in any language.
    section_conditions = {"Training job": ("demand_source", [DemandSource.TRAINING_JOB])}

    user_regions_text = forms.CharField(
        label=_("User regions"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_(
            "One a line: a name and the maximum RTT in ms, e.g. “Shanghai users: 60”; "
            "a name alone: times shown, none required."
        ),
    )
    accepted_line_types = forms.MultipleChoiceField(
        label=_("Line types accepted"),
        choices=LineType.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("None ticked: any line type."),
    )

    class Meta:
        model = Scenario
        fields = [
            name
            for _, names in SCENARIO_SECTIONS
            for name in names
            if name not in SCENARIO_FORM_ONLY_FIELDS
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, user=None, **kwargs):
        """``user``: who edits; the team choices are their teams and none (shared), the
        pools and workloads to measure those in their scope."""
        super().__init__(*args, **kwargs)
        self.user = user
        scope = scope_of(user) if user is not None else SHARED_ONLY
        limit_team_field(self.fields["team"], scope, empty_label=gettext("Shared (no team)"))
        self.fields["demand_pool"].queryset = Pool.objects.in_scope(scope).order_by("name")
        self.fields["demand_workload"].queryset = (
            Workload.objects.in_scope(scope).select_related("pool").order_by("name")
        )
        if self.instance.pk and not self.is_bound:
            self.initial["user_regions_text"] = "\n".join(
                f"{region.name}: {region.max_rtt_ms}"
                if region.max_rtt_ms is not None
                else region.name
                for region in self.instance.user_regions.all()
            )

    def clean_user_regions_text(self):
        text = self.cleaned_data.get("user_regions_text", "")
        self.user_regions = parse_user_regions(text)
        return text

    def save(self, commit=True):
        scenario = super().save(commit=False)
        if scenario.created_by_id is None:
            scenario.created_by = self.user
        if commit:
            with transaction.atomic():
                scenario.save()
                save_user_regions(scenario, getattr(self, "user_regions", []))
        return scenario

    def clean_currency(self):
        return (self.cleaned_data.get("currency") or "").upper()

    def clean_entered_hourly_profile(self):
        text = self.cleaned_data.get("entered_hourly_profile", "").strip()
        if text:
            parse_profile(text)
        return text

    def clean(self):
        cleaned = super().clean()
        source = cleaned.get("demand_source")
        required = {
            DemandSource.MEASURED_POOL: ["demand_pool"],
            DemandSource.MEASURED_WORKLOAD: ["demand_workload"],
            DemandSource.ENTERED: ["entered_gpu_hours_per_month", "reference_gpu_model"],
            DemandSource.TRAINING_JOB: [
                "model_architecture",
                "training_tokens",
                "training_gpus",
                "reference_gpu_model",
            ],
        }.get(source, [])
        for name in required:
            if cleaned.get(name) in (None, "") and name not in self.errors:
                self.add_error(
                    name,
                    gettext("%(field)s is needed when the demand is “%(source)s”.")
                    % {"field": self.fields[name].label, "source": DemandSource(source).label},
                )
        return cleaned


OPTION_SECTIONS = (
    (
        _("Option"),
        [
            "name",
            "kind",
            "position",
            "provider",
            "region",
            "compliance_zone",
            "gpu_model",
            "source_pool",
            "price_note",
        ],
    ),
    (_("Cloud on-demand"), ["on_demand_price_per_gpu_hour"]),
    (
        _("Cloud reserved"),
        ["reserved_price_per_gpu_hour", "reserved_upfront_per_gpu", "reserved_term_months"],
    ),
    (
        _("Owned / bare-metal"),
        [
            "purchase_price_per_gpu",
            "amortisation_months",
            "power_price_per_kwh",
            "pue",
            "colocation_per_gpu_month",
        ],
    ),
    (_("Hybrid"), ["hybrid_baseline", "baseline_gpus"]),
    (_("Running costs"), ["operations_per_month", "storage_per_month", "network_per_month"]),
    (_("Throughput"), ["throughput_basis", "efficiency"]),
    (_("Region criteria"), ["ddos_protection_gbps", "line_type", "ip_address_count"]),
)
RTT_SECTION = _("Round-trip time from each user region")

# Which typed (or pool) prices each kind needs: checked here so the error names the field.
REQUIRED_BY_KIND = {
    OptionKind.ON_DEMAND: ["on_demand_price_per_gpu_hour"],
    OptionKind.RESERVED: ["reserved_price_per_gpu_hour"],
    OptionKind.OWNED: [
        "purchase_price_per_gpu",
        "amortisation_months",
        "power_price_per_kwh",
        "pue",
    ],
}
OWNED_FIELDS = REQUIRED_BY_KIND[OptionKind.OWNED]


class OptionForm(TablerFormMixin, SectionedFormMixin, forms.ModelForm):
    sections = OPTION_SECTIONS

    class Meta:
        model = ScenarioOption
        fields = [name for _, names in OPTION_SECTIONS for name in names]

    def __init__(self, *args, scenario, scope=SHARED_ONLY, **kwargs):
        """``scope``: the editing user's; the pools offered as a source are those in it.
        Each of the scenario's user regions adds an RTT field and a box to paste ping or
        mtr --report output into (which wins over the typed number)."""
        self.scenario = scenario
        self.scope = scope
        self.user_regions = list(scenario.user_regions.all()) if scenario.pk else []
        names = []
        for region in self.user_regions:
            names += [f"rtt_ms_{region.pk}", f"rtt_output_{region.pk}"]
        self.sections = OPTION_SECTIONS + (((RTT_SECTION, names),) if names else ())
        super().__init__(*args, **kwargs)
        stated = {}
        if self.instance.pk:
            stated = {rtt.region_id: rtt.rtt_ms for rtt in self.instance.rtts.all()}
        for region in self.user_regions:
            self.add_field(
                f"rtt_ms_{region.pk}",
                forms.DecimalField(
                    label=gettext("RTT from %(region)s (ms)") % {"region": region.name},
                    required=False,
                    min_value=0,
                    max_digits=7,
                    decimal_places=1,
                    initial=stated.get(region.pk),
                    help_text=gettext("Blank: not stated."),
                ),
            )
            self.add_field(
                f"rtt_output_{region.pk}",
                forms.CharField(
                    label=gettext("…or ping / mtr output from %(region)s")
                    % {"region": region.name},
                    required=False,
                    widget=forms.Textarea(attrs={"rows": 2}),
                    help_text=gettext(
                        "Paste the output of ping (its rtt min/avg/max/mdev line) or mtr --report "
                        "(the last hop's Avg)."
                    ),
                ),
            )
        if "source_pool" in self.fields:
            self.fields["source_pool"].queryset = Pool.objects.in_scope(scope).order_by("name")
        currency = scenario.currency
        for name in MONEY_FIELDS:
            if name in self.fields:
                self.fields[name].label = f"{self.fields[name].label} ({currency})"

    def bounds_scale(self) -> Scale:
        # Typed prices are in the scenario's currency; the bounds are in USD.
        return Scale(self.scenario.currency, self.scenario.exchange_rate or Decimal(1))

    def _required_fields(self, kind, cleaned):
        if kind == OptionKind.HYBRID:
            baseline = cleaned.get("hybrid_baseline")
            names = ["on_demand_price_per_gpu_hour"]
            names += OWNED_FIELDS if baseline == "owned" else REQUIRED_BY_KIND[OptionKind.RESERVED]
            return names
        return REQUIRED_BY_KIND.get(kind, [])

    def clean(self):
        cleaned = super().clean()
        kind = cleaned.get("kind")
        pool = cleaned.get("source_pool")
        for name in self._required_fields(kind, cleaned):
            if cleaned.get(name) is not None or name in self.errors:
                continue
            if pool_value(pool, name) is not None:
                continue
            values = {"field": self.fields[name].label, "kind": OptionKind(kind).label.lower()}
            if pool:
                message = gettext(
                    "%(field)s is needed for a %(kind)s option: type it, or choose a pool that "
                    "has it and %(pool)s has none."
                ) % {**values, "pool": pool}
            else:
                message = (
                    gettext(
                        "%(field)s is needed for a %(kind)s option: type it, or choose a pool that "
                        "has it."
                    )
                    % values
                )
            self.add_error(name, message)
        term_missing = not cleaned.get("reserved_term_months") and not (
            pool and pool.reserved_term_months
        )
        if (
            cleaned.get("reserved_upfront_per_gpu")
            and term_missing
            and "reserved_term_months" not in self.errors
        ):
            self.add_error(
                "reserved_term_months",
                gettext("Reservation term (months) is needed to spread the upfront payment."),
            )
        if kind == OptionKind.HYBRID and cleaned.get("on_demand_price_per_gpu_hour") == 0:
            self.add_error(
                "on_demand_price_per_gpu_hour", gettext("A hybrid's burst price must be above 0.")
            )
        if cleaned.get("baseline_gpus") is not None and kind != OptionKind.HYBRID:
            self.add_error("baseline_gpus", gettext("Baseline GPUs apply to hybrid options only."))
        if cleaned.get("throughput_basis") == ThroughputBasis.DECODE_CEILING:
            workload = self.scenario.demand_workload
            has_model = self.scenario.model_architecture_id or (
                workload and workload.model_architecture_id
            )
            if not has_model:
                self.add_error(
                    "throughput_basis",
                    gettext(
                        "The decode ceiling needs a model: measure a workload that has a model "
                        "architecture, or set the scenario's model architecture."
                    ),
                )
        self.rtt_ms_by_region_id = {}
        for region in self.user_regions:
            typed_name, output_name = f"rtt_ms_{region.pk}", f"rtt_output_{region.pk}"
            output = (cleaned.get(output_name) or "").strip()
            value = cleaned.get(typed_name)
            if output:
                try:
                    value = Decimal(str(parse_rtt_ms(output))).quantize(Decimal("0.1"))
                except RttParseError as error:
                    self.add_error(output_name, translated(error))
                    continue
                if value >= Decimal("1000000"):
                    self.add_error(output_name, gettext("That round-trip time is out of range."))
                    continue
            self.rtt_ms_by_region_id[region.pk] = value
        name = cleaned.get("name")
        if name:
            clash = ScenarioOption.objects.filter(scenario=self.scenario, name=name)
            if self.instance.pk:
                clash = clash.exclude(pk=self.instance.pk)
            if clash.exists():
                self.add_error(
                    "name",
                    gettext("This scenario already has an option named “%(name)s”.")
                    % {"name": name},
                )
        return cleaned

    def save(self, commit=True):
        option = super().save(commit=False)
        option.scenario = self.scenario
        if commit:
            with transaction.atomic():
                option.save()
                save_option_rtts(option, getattr(self, "rtt_ms_by_region_id", {}))
        return option


class WhatIfForm(TablerFormMixin, forms.Form):
    """Unsaved changes to a scenario's inputs: the comparison recomputes as they change."""

    # Ranges: apps/core/bounds.py, as on the scenario form and the API.
    horizon_months = forms.IntegerField(label=_("Horizon (months)"))
    window_days = forms.IntegerField(label=_("Measured window (days)"))
    reference_efficiency = forms.DecimalField(
        label=_("Reference efficiency (0–1)"), max_digits=4, decimal_places=3
    )
    entered_gpu_hours_per_month = forms.DecimalField(
        label=_("GPU-hours per month"), required=False, max_digits=14, decimal_places=2
    )

    FIELDS = (
        "horizon_months",
        "window_days",
        "reference_efficiency",
        "entered_gpu_hours_per_month",
    )

    @classmethod
    def for_scenario(cls, scenario, data=None):
        initial = {name: getattr(scenario, name) for name in cls.FIELDS}
        return cls(data, initial=initial) if data is not None else cls(initial=initial)

    def apply(self, scenario) -> dict:
        """Set the valid values on the (unsaved) scenario; returns name → saved value
        for each one changed. An emptied GPU-hours per month clears it; the others keep
        the saved value when left empty."""
        values = {
            name: self.cleaned_data.get(name)
            for name in self.FIELDS
            if self.cleaned_data.get(name) is not None or name == "entered_gpu_hours_per_month"
        }
        return apply_what_if(scenario, values)


class PriceImportForm(TablerFormMixin, forms.Form):
    file = forms.FileField(
        label=_("SkyPilot price catalog (CSV)"),
        help_text=_(
            "InstanceType, AcceleratorName, AcceleratorCount, Price, Region, GpuInfo… "
            "as in SkyPilot's catalogs; prices in USD per instance-hour."
        ),
    )
    provider = forms.CharField(label=_("Provider"), max_length=100, initial="Lambda")
    region = forms.CharField(
        label=_("Region"),
        max_length=100,
        required=False,
        help_text=_("Blank: the cheapest region in the file."),
    )
    gpu_models = forms.ModelMultipleChoiceField(
        queryset=GpuModel.objects.order_by("vendor", "name"),
        label=_("GPU models"),
        help_text=_("One on-demand option per GPU model, at its cheapest price."),
    )

    MAX_BYTES = 5 * 1024 * 1024

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > self.MAX_BYTES:
            raise forms.ValidationError(
                gettext("The file is over 5 MB; a price catalog is far smaller.")
            )
        try:
            text = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise forms.ValidationError(
                gettext("Not UTF-8 text (byte %(byte)s).") % {"byte": error.start}
            ) from None
        try:
            self.catalog_rows = parse_price_catalog(text)
        except PriceCatalogError as error:
            raise forms.ValidationError(translated(error)) from None
        if not self.catalog_rows[0]:
            raise forms.ValidationError(gettext("The file has no GPU rows with a price."))
        return upload


class ExportForm(forms.Form):
    format = forms.ChoiceField(label=_("Format"), choices=ComparisonExport.Format.choices)
