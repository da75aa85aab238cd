import django_filters
from django import forms
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import AuditEvent


class AuditEventFilter(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(
        label=_("Event"), choices=AuditEvent.Kind.choices, empty_label=_("Every event")
    )
    user = django_filters.CharFilter(
        label=_("User"),
        method="filter_user",
        help_text="A username: the events about that user and those the user made.",
        widget=forms.TextInput(attrs={"placeholder": _("Username")}),
    )

    class Meta:
        model = AuditEvent
        fields = ["kind", "user"]

    def filter_user(self, queryset, name, value):
        return queryset.filter(Q(username__iexact=value) | Q(actor_username__iexact=value))
