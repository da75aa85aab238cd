from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import Team
from apps.core.forms import SlugFromNameMixin, TablerFormMixin
from apps.currencies.codes import currency_choices, reporting_currency
from apps.pools.models import Pool
from apps.showback.models import Budget


class TeamForm(SlugFromNameMixin, TablerFormMixin, forms.ModelForm):
    """Superusers only (the views check): membership changes are audited by the m2m
    signal of apps/accounts/audit.py, whoever makes them."""

    members = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username"),
        required=False,
        label=_("Members"),
        widget=forms.SelectMultiple(attrs={"size": 8}),
    )

    class Meta:
        model = Team
        fields = ["name", "slug", "description", "members"]
        labels = {"name": _("Name"), "slug": _("Slug"), "description": _("Description")}


class BudgetForm(TablerFormMixin, forms.ModelForm):
    class Meta:
        model = Budget
        fields = ["team", "pool", "amount_per_month", "currency", "note"]
        labels = {
            "team": _("Team"),
            "pool": _("Pool"),
            "amount_per_month": _("Amount per month"),
            "currency": _("Currency"),
            "note": _("Note"),
        }
        help_texts = {
            "team": _("A team's budget counts its showback spend; leave empty for a pool's."),
            "pool": _("A pool's budget counts the pool's whole cost; leave empty for a team's."),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = Team.objects.order_by("name")
        self.fields["pool"].queryset = Pool.objects.active().order_by("name")
        self.fields["team"].required = self.fields["pool"].required = False
        # A budget keeps the currency it is stated in; a new one is in the reporting
        # currency unless its author picks another.
        self.fields["currency"] = forms.ChoiceField(
            choices=currency_choices(),
            initial=self.instance.currency or reporting_currency(),
            label=_("Currency"),
            # Left out of a post: the budget keeps its currency (a new one: the reporting
            # currency's).
            required=False,
            help_text=gettext(
                "The amount's currency. The burn-down converts it to the reporting "
                "currency, %(code)s, at the month's exchange rate."
            )
            % {"code": reporting_currency()},
        )

    def clean_currency(self):
        return self.cleaned_data.get("currency") or self.instance.currency or reporting_currency()
