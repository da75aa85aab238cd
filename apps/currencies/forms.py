from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.currencies.codes import USD, currency_problem
from apps.currencies.models import ExchangeRate
from apps.currencies.services import parse_month


class ExchangeRateForm(forms.ModelForm):
    month = forms.CharField(
        label=_("Month"), help_text=_("YYYY-MM: the rate holds for the whole UTC month.")
    )

    class Meta:
        model = ExchangeRate
        fields = ["month", "currency", "units_per_usd", "source"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.initial["month"] = f"{self.instance.month:%Y-%m}"

    def clean_month(self):
        month = parse_month(self.cleaned_data["month"])
        if month is None:
            raise forms.ValidationError(gettext("Expected a month as YYYY-MM, e.g. 2026-10."))
        return month

    def clean_currency(self):
        code = (self.cleaned_data.get("currency") or "").strip().upper()
        problem = currency_problem(code)
        if problem:
            raise forms.ValidationError(problem)
        if code == USD:
            raise forms.ValidationError(gettext("USD needs no rate: it is 1 by definition."))
        return code


class RateImportForm(forms.Form):
    file = forms.FileField(
        label=_("CSV file"),
        help_text=_("Columns month,currency,units_per_usd (and optionally source)."),
    )
