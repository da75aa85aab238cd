from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import Team
from apps.core.forms import SlugFromNameMixin, TablerFormMixin
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
        fields = ["team", "pool", "amount_usd_per_month", "note"]
        labels = {
            "team": _("Team"),
            "pool": _("Pool"),
            "amount_usd_per_month": _("Amount (USD per month)"),
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
