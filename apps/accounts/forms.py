from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import GroupMapping, MappedRole
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


class GroupMappingForm(TablerFormMixin, forms.ModelForm):
    class Meta:
        model = GroupMapping
        fields = ["idp_group", "role", "team"]
        labels = {"idp_group": _("Identity provider group"), "role": _("Role"), "team": _("Team")}
        help_texts = {
            "role": _("Administrator makes the user a superuser. Leave empty to give a team only."),
            "team": _("Members of the group join this team. Leave empty to give a role only."),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = [("", _("No role"))] + list(MappedRole.choices)
        self.fields["team"].empty_label = _("No team")

    def clean(self):
        cleaned = super().clean()
        role, team = cleaned.get("role"), cleaned.get("team")
        if not role and not team:
            raise forms.ValidationError(_("Choose a role, a team, or both."))
        duplicates = GroupMapping.objects.filter(
            idp_group=cleaned.get("idp_group", ""), role=role or "", team=team
        ).exclude(pk=self.instance.pk)
        if duplicates.exists():
            raise forms.ValidationError(_("This group already gives exactly that."))
        return cleaned
