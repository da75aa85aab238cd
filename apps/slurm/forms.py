from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import Team
from apps.clusters.models import Cluster
from apps.core.forms import TablerFormMixin
from apps.pools.models import Workload
from apps.pools.scoped import SHARED_ONLY
from apps.slurm.models import SlurmMappingRule

# What a page upload may hold (the API and the command take more).
MAX_UPLOAD_BYTES = 20 * 1024 * 1024


class SlurmImportForm(TablerFormMixin, forms.Form):
    cluster = forms.ModelChoiceField(
        label=_("Cluster"),
        queryset=Cluster.objects.filter(archived_at__isnull=True).order_by("name"),
        to_field_name="slug",
    )
    file = forms.FileField(
        label=_("sacct output file"),
        required=False,
        help_text=_("sacct --parsable2 output with its header line; or paste it below."),
    )
    text = forms.CharField(
        label=_("Or paste the text"),
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 10, "class": "font-monospace"}),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # An installation with one cluster has nothing to choose.
        clusters = list(self.fields["cluster"].queryset[:2])
        if len(clusters) == 1:
            self.fields["cluster"].initial = clusters[0].slug

    def clean(self):
        cleaned = super().clean()
        upload, text = cleaned.get("file"), cleaned.get("text") or ""
        if upload is not None and text.strip():
            raise forms.ValidationError(gettext("Upload a file or paste text, not both."))
        if upload is not None:
            if upload.size > MAX_UPLOAD_BYTES:
                raise forms.ValidationError(
                    gettext("The file is larger than %(size)s MB: import it with the command.")
                    % {"size": MAX_UPLOAD_BYTES // (1024 * 1024)}
                )
            try:
                text = upload.read().decode("utf-8")
            except UnicodeDecodeError as error:
                raise forms.ValidationError(
                    gettext("The file is not UTF-8 text (byte %(byte)s).") % {"byte": error.start}
                ) from None
        if not text.strip():
            raise forms.ValidationError(gettext("Upload a file or paste sacct's output."))
        cleaned["sacct_text"] = text
        cleaned["file_name"] = upload.name if upload is not None else ""
        return cleaned


def _cluster_filter():
    return forms.ModelChoiceField(
        label=_("Cluster"),
        queryset=Cluster.objects.order_by("name"),
        to_field_name="slug",
        required=False,
        empty_label=_("All clusters"),
    )


class _FilterForm(forms.Form):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            select = isinstance(field.widget, forms.Select)
            field.widget.attrs["class"] = "form-select" if select else "form-control"


class SlurmJobFilterForm(_FilterForm):
    cluster = _cluster_filter()
    user = forms.CharField(label=_("User"), required=False)
    account = forms.CharField(label=_("Account"), required=False)
    state = forms.CharField(label=_("State"), required=False)
    mapping = forms.ChoiceField(
        label=_("Mapping"),
        required=False,
        choices=[
            ("", _("All jobs")),
            ("mapped", _("Mapped to a workload")),
            ("unmapped", _("No rule maps")),
        ],
    )


class EfficiencyFilterForm(_FilterForm):
    week = forms.DateField(
        label=_("Week of"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text=_("Any day of the week (Monday to Sunday, UTC)."),
    )
    cluster = _cluster_filter()
    group = forms.ChoiceField(
        label=_("Per"),
        required=False,
        choices=[
            ("user", _("User")),
            ("team", _("Team")),
            ("account", _("Account")),
            ("job", _("Job")),
        ],
    )


def rule_target_errors(workload, team) -> dict[str, str]:
    """What a mapping rule's form and the API refuse, by field: a rule that maps to
    nothing."""
    if workload is None and team is None:
        return {"workload": gettext("Name a workload, a team, or both.")}
    return {}


def clean_rule_pattern(pattern: str) -> str:
    pattern = (pattern or "").strip()
    if not pattern:
        raise forms.ValidationError(gettext("Enter a value or a pattern such as proj-*."))
    return pattern


class SlurmMappingRuleForm(TablerFormMixin, forms.ModelForm):
    class Meta:
        model = SlurmMappingRule
        fields = ["cluster", "field", "pattern", "workload", "team", "priority"]

    def __init__(self, *args, scope=SHARED_ONLY, **kwargs):
        """``scope``: the user's (apps/accounts/scope.py); a rule names one of its
        workloads."""
        super().__init__(*args, **kwargs)
        self.fields["cluster"].queryset = Cluster.objects.order_by("name")
        self.fields["cluster"].empty_label = gettext("All clusters")
        self.fields["workload"].queryset = Workload.objects.in_scope(scope).order_by("name")
        self.fields["team"].queryset = Team.objects.filter(scope.team_filter("pk")).order_by("name")

    def clean_pattern(self):
        return clean_rule_pattern(self.cleaned_data["pattern"])

    def clean(self):
        cleaned = super().clean()
        if "workload" in self.errors or "team" in self.errors:
            return cleaned
        for name, message in rule_target_errors(
            cleaned.get("workload"), cleaned.get("team")
        ).items():
            self.add_error(name, message)
        return cleaned
