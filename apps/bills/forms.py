from django import forms
from django.utils.translation import gettext_lazy as _

from apps.bills.models import MappingRule, ReconciliationSettings
from apps.core.forms import TablerFormMixin
from apps.pools.choices import Deployment
from apps.pools.models import Pool

# The page imports while the request waits, so a larger upload is refused before it is
# read: ``manage.py import_bill`` reads any size.
MAX_UPLOAD_BYTES = 100 * 1024 * 1024


class BillUploadForm(TablerFormMixin, forms.Form):
    file = forms.FileField(
        label=_("FOCUS file"),
        help_text=_("A provider's FOCUS 1.0–1.3 dataset as .csv or .csv.gz."),
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                _(
                    "The file holds %(size)s bytes; the page takes at most %(limit)s: use "
                    "manage.py import_bill for larger files."
                ),
                params={"size": f"{upload.size:,}", "limit": f"{MAX_UPLOAD_BYTES:,}"},
            )
        return upload


class MappingRuleForm(TablerFormMixin, forms.ModelForm):
    class Meta:
        model = MappingRule
        fields = ["priority", "kind", "value", "pool"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Bills price cloud pools only.
        self.fields["pool"].queryset = Pool.objects.filter(
            deployment__in=[Deployment.CLOUD_ON_DEMAND, Deployment.CLOUD_RESERVED],
            archived_at__isnull=True,
        ).order_by("name")

    def clean(self):
        cleaned = super().clean()
        kind, value = cleaned.get("kind"), (cleaned.get("value") or "").strip()
        if kind == MappingRule.Kind.TAG and ("=" not in value or value.startswith("=")):
            self.add_error("value", _("A tag rule is key=value, e.g. team=ml."))
        cleaned["value"] = value
        return cleaned


class ToleranceForm(TablerFormMixin, forms.ModelForm):
    class Meta:
        model = ReconciliationSettings
        fields = ["tolerance_pct"]
        widgets = {"tolerance_pct": forms.NumberInput(attrs={"step": "0.01", "min": "0"})}

    def clean_tolerance_pct(self):
        value = self.cleaned_data["tolerance_pct"]
        if value < 0:
            raise forms.ValidationError(_("A tolerance cannot be negative."))
        return value
