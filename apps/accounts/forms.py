from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from apps.core.forms import TablerFormMixin

LIFETIME_CHOICES = [
    (7, _("7 days")),
    (30, _("30 days")),
    (90, _("90 days")),
    (180, _("180 days")),
    (365, _("1 year")),
]


class ApiTokenForm(TablerFormMixin, forms.Form):
    description = forms.CharField(
        label=_("Description"),
        max_length=200,
        help_text=_("What uses this token, e.g. “dcgm scraper on node-17”."),
    )
    lifetime_days = forms.TypedChoiceField(
        label=_("Expires after"),
        choices=LIFETIME_CHOICES,
        coerce=int,
        initial=settings.API_TOKEN_DEFAULT_LIFETIME_DAYS,
    )
    read_only = forms.BooleanField(
        label=_("Read only"),
        required=False,
        initial=True,
        help_text=_("Read-only tokens can read everything and change nothing."),
    )
