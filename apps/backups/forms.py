from datetime import timedelta
from decimal import Decimal

from django import forms
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.backups import services
from apps.backups.coverage import items_for
from apps.backups.models import (
    BackupPolicy,
    BackupVersion,
    RestoreDrill,
    Tier,
    VersionKind,
    version_name,
    version_name_clash,
    version_rule_errors,
)
from apps.core.forms import TablerFormMixin

EVIDENCE_MAX_BYTES = 25 * 10**6
DATETIME_FORMAT = "%Y-%m-%dT%H:%M"


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, attrs=None):
        super().__init__(attrs, format=DATETIME_FORMAT)


RETRY_DEFAULT_DAYS = BackupPolicy._meta.get_field("drill_retry_interval_days").default

TIER_RETENTION_MISSING = {
    "hot": _("Say how long the hot tier keeps versions: a count, days, or both."),
    "warm": _("Say how long the warm tier keeps versions: a count, days, or both."),
    "cold": _("Say how long the cold tier keeps versions: a count, days, or both."),
}
TIER_PARTS = ("location", "retention_count", "retention_days", "price_per_gb_month_usd")
TIER_FIELDS = [f"{tier}_{part}" for tier in Tier.values for part in TIER_PARTS]


class BackupPolicyForm(TablerFormMixin, forms.ModelForm):
    covered_items = forms.MultipleChoiceField(
        label=_("What is kept"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    class Meta:
        model = BackupPolicy
        fields = [
            "covered_items",
            "current_data_version",
            *TIER_FIELDS,
            "rpo_minutes",
            "rto_minutes",
            "drill_frequency_days",
            "drill_retry_interval_days",
            "mtbf_hours",
            "checkpoint_size_gb",
            "notes",
        ]
        widgets = {"notes": forms.Textarea(attrs={"rows": 2})}
        error_messages = {
            "drill_frequency_days": {"min_value": _("Drill at least every day: type 1 or more.")},
            "drill_retry_interval_days": {
                "min_value": _("Retry a failed drill after at least 1 day: type 1 or more, e.g. 7.")
            },
        }

    def __init__(self, *args, workload, **kwargs):
        super().__init__(*args, **kwargs)
        self.instance.workload = workload
        self.checklist = items_for(self.instance.side, quantized=self.instance.quantized)
        field = self.fields["covered_items"]
        field.choices = [(item.key, item.label) for item in self.checklist]
        field.widget.attrs["class"] = "form-check-input"
        retry = self.fields["drill_retry_interval_days"]
        retry.required = False
        retry.help_text = gettext("%(help)s Blank: %(days)s days.") % {
            "help": retry.help_text,
            "days": RETRY_DEFAULT_DAYS,
        }
        if not workload.is_training:
            for name in ("current_data_version", "mtbf_hours", "checkpoint_size_gb"):
                del self.fields[name]

    def checklist_rows(self):
        """(checkbox, item) pairs so the template can show what each item protects."""
        by_key = {item.key: item for item in self.checklist}
        return [(box, by_key[box.data["value"]]) for box in self["covered_items"]]

    def tier_rows(self):
        return [
            (label, [self[f"{tier}_{part}"] for part in TIER_PARTS]) for tier, label in Tier.choices
        ]

    def clean_drill_retry_interval_days(self):
        retry_days = self.cleaned_data.get("drill_retry_interval_days")
        return RETRY_DEFAULT_DAYS if retry_days is None else retry_days

    def clean(self):
        cleaned = super().clean()
        rpo = cleaned.get("rpo_minutes")
        for tier in Tier.values:
            location = cleaned.get(f"{tier}_location")
            has_retention = cleaned.get(f"{tier}_retention_count") or cleaned.get(
                f"{tier}_retention_days"
            )
            if location and not has_retention:
                self.add_error(
                    f"{tier}_retention_count",
                    TIER_RETENTION_MISSING[tier],
                )
        if rpo and rpo > 365 * 24 * 60:
            self.add_error("rpo_minutes", gettext("An RPO of more than a year is not a target."))
        frequency_days = cleaned.get("drill_frequency_days")
        retry_days = cleaned.get("drill_retry_interval_days")
        if frequency_days and retry_days and retry_days > frequency_days:
            self.add_error(
                "drill_retry_interval_days",
                gettext(
                    "A failed drill is retried sooner than the regular drill: at most "
                    "%(days)s days (Drill every), e.g. 7."
                )
                % {"days": frequency_days},
            )
        return cleaned

    def save(self, commit=True):
        policy = super().save(commit=False)
        if commit:
            policy = services.save_policy(policy)
        return policy


class BackupVersionForm(TablerFormMixin, forms.ModelForm):
    size_gb = forms.DecimalField(
        label=_("Size (GB)"),
        min_value=Decimal("0.000000001"),
        max_digits=16,
        decimal_places=9,
        help_text=_("10⁹ bytes."),
    )
    checksums = forms.CharField(
        label=_("Checksums per node or replica"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "class": "font-monospace"}),
        help_text=_(
            "One line per node or replica: its name, a space, the checksum. "
            "Replaces the stored ones."
        ),
    )
    purged = forms.BooleanField(label=_("Purged: the stored copy was deleted"), required=False)

    class Meta:
        model = BackupVersion
        fields = [
            "kind",
            "model_name",
            "data_version",
            "precision",
            "config_hash",
            "step",
            "tag",
            "tier",
            "location",
            "created_at",
            "checksum_algorithm",
            "gray_ratio_percent",
            "rollback_steps",
            "validation_results",
            "release_owner",
        ]
        widgets = {
            "created_at": DateTimeLocalInput(),
            "rollback_steps": forms.Textarea(attrs={"rows": 2}),
            "validation_results": forms.Textarea(attrs={"rows": 2}),
        }

    def __init__(self, *args, workload, **kwargs):
        super().__init__(*args, **kwargs)
        self.workload = workload
        self.instance.workload = workload
        kinds = (
            [VersionKind.TRAINING_CHECKPOINT]
            if workload.is_training
            else [VersionKind.INFERENCE_RELEASE, VersionKind.QUANTIZED_VARIANT]
        )
        self.fields["kind"].choices = [(kind.value, kind.label) for kind in kinds]
        if self.instance.pk:
            self.fields["size_gb"].initial = Decimal(self.instance.size_bytes) / 10**9
            self.fields["purged"].initial = self.instance.purged_at is not None
            self.fields["checksums"].initial = "\n".join(
                f"{row.node} {row.checksum}" for row in self.instance.checksums.all()
            )
        else:
            self.fields["created_at"].initial = timezone.now().strftime(DATETIME_FORMAT)
            self.fields["checksum_algorithm"].initial = "sha256"
        self.parsed_checksums = None

    def clean(self):
        cleaned = super().clean()
        for name, message in version_rule_errors(
            workload=self.workload,
            kind=cleaned.get("kind"),
            precision=cleaned.get("precision"),
            data_version=cleaned.get("data_version"),
        ).items():
            self.add_error(name, message)
        algorithm = cleaned.get("checksum_algorithm")
        if algorithm:
            pairs, errors = services.parse_checksum_lines(cleaned.get("checksums", ""), algorithm)
            for message in errors:
                self.add_error("checksums", message)
            self.parsed_checksums = pairs
        parts = ("model_name", "precision", "config_hash")
        if all(cleaned.get(name) for name in parts) and not self.errors:
            name = version_name(
                model_name=cleaned["model_name"],
                precision=cleaned["precision"],
                data_version=cleaned.get("data_version", ""),
                config_hash=cleaned["config_hash"],
                step=cleaned.get("step"),
                tag=cleaned.get("tag", ""),
            )
            clash = version_name_clash(self.workload, name, exclude_pk=self.instance.pk)
            if clash:
                self.add_error(None, clash)
        return cleaned

    def save(self, commit=True, user=None):
        version = super().save(commit=False)
        version.size_bytes = int(self.cleaned_data["size_gb"] * 10**9)
        if self.cleaned_data["purged"]:
            version.purged_at = version.purged_at or timezone.now()
        else:
            version.purged_at = None
        return services.save_version(version, checksums=self.parsed_checksums, user=user)


def _version_choice_label(version):
    tier = str(version.get_tier_display()).split(" ")[0].lower()
    if version.is_kept:
        return gettext("%(name)s (%(tier)s)") % {"name": version.name, "tier": tier}
    return gettext("%(name)s (%(tier)s, purged)") % {"name": version.name, "tier": tier}


class RestoreDrillForm(TablerFormMixin, forms.ModelForm):
    class Meta:
        model = RestoreDrill
        fields = [
            "version",
            "restored_from_tier",
            "started_at",
            "finished_at",
            "reference_time",
            "resumed",
            "outcome",
            "observed_checksums",
            "notes",
            "evidence",
        ]
        widgets = {
            "started_at": DateTimeLocalInput(),
            "finished_at": DateTimeLocalInput(),
            "reference_time": DateTimeLocalInput(),
            "observed_checksums": forms.Textarea(attrs={"rows": 3, "class": "font-monospace"}),
            "notes": forms.Textarea(attrs={"rows": 2}),
        }
        error_messages = {
            "version": {
                "required": _("Pick the version that was restored."),
                "invalid_choice": _("That version is not one of this workload's: pick one listed."),
            },
            "restored_from_tier": {"required": _("Pick the tier the version was restored from.")},
            "started_at": {
                "required": _("Give when the restore started, e.g. 2026-12-01 14:30."),
                "invalid": _("Type a date and time, e.g. 2026-12-01 14:30."),
            },
            "finished_at": {
                "required": _(
                    "Give when the service answered or training ran again, e.g. 2026-12-01 15:10."
                ),
                "invalid": _("Type a date and time, e.g. 2026-12-01 15:10."),
            },
            "reference_time": {"invalid": _("Type a date and time, e.g. 2026-12-01 14:00.")},
            "outcome": {"required": _("Pick the result of the restore.")},
        }

    def __init__(self, *args, policy, **kwargs):
        super().__init__(*args, **kwargs)
        self.policy = policy
        self.instance.policy = policy
        # Purged versions are listed (and refused) so the reason is said, not hidden.
        versions = BackupVersion.objects.filter(workload_id=policy.workload_id)
        field = self.fields["version"]
        field.queryset = versions
        field.label_from_instance = _version_choice_label
        self.observed_pairs = []

    def clean_evidence(self):
        evidence = self.cleaned_data.get("evidence")
        if evidence and getattr(evidence, "size", 0) > EVIDENCE_MAX_BYTES:
            raise forms.ValidationError(
                gettext(
                    "The evidence file is %(size)s MB; the limit is %(limit)s MB. Attach a log "
                    "excerpt or a screenshot."
                )
                % {
                    "size": f"{evidence.size / 1e6:,.1f}",
                    "limit": f"{EVIDENCE_MAX_BYTES / 1e6:,.0f}",
                }
            )
        return evidence

    def clean(self):
        cleaned = super().clean()
        version = cleaned.get("version")
        started, finished = cleaned.get("started_at"), cleaned.get("finished_at")
        reference = cleaned.get("reference_time") or started
        if version is not None and not version.is_kept:
            self.add_error(
                "version",
                gettext(
                    "%(name)s was purged on %(day)s: it cannot have been restored. Pick a "
                    "version that is still kept."
                )
                % {"name": version.name, "day": f"{version.purged_at:%Y-%m-%d}"},
            )
        if started and finished:
            if finished <= started:
                self.add_error(
                    "finished_at",
                    gettext(
                        "The drill finished (%(finished)s) before it started (%(started)s): "
                        "check the two times."
                    )
                    % {
                        "finished": f"{finished:%Y-%m-%d %H:%M}",
                        "started": f"{started:%Y-%m-%d %H:%M}",
                    },
                )
            elif finished > timezone.now() + timedelta(minutes=5):
                self.add_error(
                    "finished_at",
                    gettext("This time is in the future: record a drill once it has finished."),
                )
        if version is not None and reference and version.created_at > reference:
            self.add_error(
                "reference_time" if cleaned.get("reference_time") else "version",
                gettext(
                    "%(name)s was created at %(created)s, after the drill's reference time: it "
                    "cannot be what was restored then."
                )
                % {"name": version.name, "created": f"{version.created_at:%Y-%m-%d %H:%M}"},
            )
        if version is not None:
            pairs, errors = services.parse_checksum_lines(
                cleaned.get("observed_checksums", ""), version.checksum_algorithm
            )
            for message in errors:
                self.add_error("observed_checksums", message)
            self.observed_pairs = pairs
        return cleaned

    def save(self, commit=True, user=None):
        drill = super().save(commit=False)
        return services.record_drill(drill, observed_pairs=self.observed_pairs, user=user)
