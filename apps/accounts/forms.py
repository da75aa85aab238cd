from django import forms
from django.conf import settings

from apps.core.forms import TablerFormMixin

LIFETIME_CHOICES = [
    (7, "7 days"),
    (30, "30 days"),
    (90, "90 days"),
    (180, "180 days"),
    (365, "1 year"),
]


class ApiTokenForm(TablerFormMixin, forms.Form):
    description = forms.CharField(
        max_length=200, help_text="What uses this token, e.g. “dcgm scraper on node-17”."
    )
    lifetime_days = forms.TypedChoiceField(
        label="Expires after",
        choices=LIFETIME_CHOICES,
        coerce=int,
        initial=settings.API_TOKEN_DEFAULT_LIFETIME_DAYS,
    )
    read_only = forms.BooleanField(
        required=False,
        initial=True,
        help_text="Read-only tokens can read everything and change nothing.",
    )
