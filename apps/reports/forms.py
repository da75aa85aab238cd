from datetime import UTC, datetime, time, timedelta

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.accounts.scope import EVERYTHING, Scope
from apps.clusters.models import Cluster
from apps.core.forms import TablerFormMixin
from apps.pools.hours import zone_or_error
from apps.pools.models import TRAINING_KINDS, Interruption, Pool, Purpose, Workload
from apps.reports.cost.report import GROUP_BY_CHOICES

DEFAULT_REPORT_DAYS = 30
MAX_REPORT_DAYS = 3 * 366
# Ranges longer than this are recomputed by a Celery job, not inside a page request.
SYNC_RECOMPUTE_DAYS = 31
# What a report groups by: the filter's choice, and the noun of the table's title ("Cost
# by pool").
_GROUPINGS = (
    ("pool", _("Pool"), _("pool")),
    ("purpose", _("Purpose"), _("purpose")),
    ("workload", _("Workload"), _("workload")),
    ("cluster", _("Cluster"), _("cluster")),
)
GROUP_BY_LABELS = {value: label for value, label, _noun in _GROUPINGS}
GROUP_BY_NOUNS = {value: noun for value, _label, noun in _GROUPINGS}


def _by_slug(queryset, label, empty_label) -> forms.ModelChoiceField:
    """An optional choice of one object, named by its slug in the query string."""
    return forms.ModelChoiceField(
        queryset=queryset,
        to_field_name="slug",
        required=False,
        label=label,
        empty_label=empty_label,
    )


class ReportFilterForm(TablerFormMixin, forms.Form):
    """The reports page's filters. Dates are whole UTC days, both included. The pools
    offered are those in the viewer's ``scope``; another pool is refused as an unknown
    choice, as a pool that does not exist is."""

    start = forms.DateField(
        label=_("From (UTC day)"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
    )
    end = forms.DateField(
        label=_("To (UTC day, included)"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
    )
    group_by = forms.ChoiceField(
        label=_("Group by"),
        choices=[(value, GROUP_BY_LABELS[value]) for value in GROUP_BY_CHOICES],
        required=False,
    )
    purpose = forms.ChoiceField(
        label=_("Purpose"), choices=[("", _("All purposes")), *Purpose.choices], required=False
    )
    pool = _by_slug(Pool.objects.order_by("name"), _("Pool"), _("All pools"))
    cluster = _by_slug(Cluster.objects.order_by("name"), _("Cluster"), _("All clusters"))
    tz = forms.CharField(
        label=_("Time zone for curves"),
        required=False,
        help_text=_("IANA name; the hour-of-day curve and heatmap use it."),
    )

    def __init__(self, data=None, *args, scope: Scope = EVERYTHING, **kwargs):
        self.scope = scope
        # A link that names only some filters (``?start=…``) shows the defaults it implies
        # in the other fields, not blanks; the figures are the same either way (clean()).
        if data is not None:
            defaults = self.defaults()
            missing = {
                name: defaults[name] for name in ("end", "group_by", "tz") if name not in data
            }
            if "start" not in data and "end" not in data:
                missing["start"] = defaults["start"]
            if missing:
                data = data.copy()
                data.update(missing)
        super().__init__(data, *args, **kwargs)
        self.fields["pool"].queryset = Pool.objects.in_scope(scope).order_by("name")

    @classmethod
    def defaults(cls) -> dict:
        """The filters of a first visit: the last 30 UTC days, by pool, in UTC."""
        today = timezone.now().astimezone(UTC).date()
        start = today - timedelta(days=DEFAULT_REPORT_DAYS - 1)
        return {
            "start": start.isoformat(),
            "end": today.isoformat(),
            "group_by": "pool",
            "tz": "UTC",
        }

    def clean_tz(self):
        value = self.cleaned_data.get("tz") or "UTC"
        try:
            zone_or_error(value)
        except ValueError as error:
            raise forms.ValidationError(str(error)) from None
        return value

    def clean(self):
        cleaned = super().clean()
        today = timezone.now().astimezone(UTC).date()
        end = cleaned.get("end") or today
        start = cleaned.get("start") or end - timedelta(days=DEFAULT_REPORT_DAYS - 1)
        if "start" not in self.errors and "end" not in self.errors:
            if end < start:
                self.add_error("end", _("The end day must be on or after the start day."))
            elif (end - start).days + 1 > MAX_REPORT_DAYS:
                self.add_error("start", _("A report covers at most 3 years."))
        cleaned["start"], cleaned["end"] = start, end
        cleaned["group_by"] = cleaned.get("group_by") or "pool"
        return cleaned


class InterruptionForm(TablerFormMixin, forms.ModelForm):
    class Meta:
        model = Interruption
        fields = [
            "workload",
            "occurred_at",
            "cause",
            "restart_minutes",
            "last_checkpoint_at",
            "gpus",
            "notes",
        ]
        widgets = {
            "occurred_at": forms.DateTimeInput(attrs={"type": "datetime-local"}),
            "last_checkpoint_at": forms.DateTimeInput(attrs={"type": "datetime-local"}),
            "notes": forms.Textarea(attrs={"rows": 2}),
        }
        help_texts = {"occurred_at": _("In your browser's time zone, to the minute.")}

    def __init__(self, *args, scope: Scope = EVERYTHING, **kwargs):
        """``scope``: the editing user's; the workloads offered are those in it."""
        super().__init__(*args, **kwargs)
        self.fields["workload"].queryset = (
            Workload.objects.in_scope(scope).filter(kind__in=TRAINING_KINDS).order_by("name")
        )

    def clean(self):
        cleaned = super().clean()
        errors = Interruption.rule_errors(
            cleaned.get("occurred_at"),
            cleaned.get("last_checkpoint_at"),
            cleaned.get("workload"),
            timezone.now(),
        )
        for name, message in errors.items():
            self.add_error(name, message)
        return cleaned


def report_span(data: dict) -> tuple[datetime, datetime]:
    """[start, end) of a report's UTC days, both included."""
    return (
        datetime.combine(data["start"], time.min, tzinfo=UTC),
        datetime.combine(data["end"] + timedelta(days=1), time.min, tzinfo=UTC),
    )


def report_filter_form(params, scope: Scope = EVERYTHING) -> "ReportFilterForm":
    """The reports page's filters from its query parameters, for a viewer of ``scope``;
    none at all (a first visit) gets the defaults."""
    return ReportFilterForm(params if params else ReportFilterForm.defaults(), scope=scope)
