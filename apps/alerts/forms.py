from django import forms
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import Team
from apps.accounts.scope import scope_of
from apps.alerts import registry, services
from apps.alerts.models import (
    AlertChannel,
    AlertRule,
    Silence,
    channel_errors,
    rule_errors,
    silence_errors,
)
from apps.core.forms import SectionedFormMixin, SlugFromNameMixin, TablerFormMixin
from apps.pools.models import Pool, Workload


def may_manage_fleet_wide(user) -> bool:
    """Whether ``user`` may give a rule, channel or silence no team (fleet-wide) or change
    one that has none: fleet-wide users may, and everyone may in a fleet without teams.
    A team member may not, or a rule of theirs would read other teams' pools."""
    return scope_of(user).everything or not Team.objects.exists()


def teams_of(user):
    scope = scope_of(user)
    teams = Team.objects.order_by("name")
    return teams if scope.everything else teams.filter(pk__in=sorted(scope.team_ids))


class TeamChoiceMixin:
    """The ``team`` field offers the user's teams (every team to fleet-wide users), and
    "none: fleet-wide" to those who may manage fleet-wide objects."""

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        field = self.fields["team"]
        field.queryset = teams_of(user)
        if may_manage_fleet_wide(user):
            field.required = False
            field.empty_label = gettext("None: fleet-wide")
        else:
            field.required = True
            field.empty_label = None
            if not field.queryset.exists():
                field.help_text = gettext(
                    "You belong to no team: an administrator adds you to one, or makes the "
                    "fleet-wide ones."
                )


def _section_kinds(name: str) -> list[str]:
    """The kinds whose evaluator needs the threshold field ``name``."""
    return [
        value
        for value, _label in registry.KINDS
        if registry.evaluator_for(value) and name in registry.evaluator_for(value).thresholds
    ]


# (title, fields); a threshold section is shown for the kinds that need its field.
RULE_SECTIONS = (
    (_("Rule"), ["name", "slug", "kind", "channel", "enabled"]),
    (_("Amount"), ["threshold_usd"]),
    (_("Percentage"), ["threshold_pct"]),
    (_("Window"), ["window_hours"]),
    (_("Staleness"), ["stale_minutes"]),
    (_("What it looks at"), ["team", "pool", "workload"]),
)
THRESHOLD_SECTIONS = {
    "Amount": "threshold_usd",
    "Percentage": "threshold_pct",
    "Window": "window_hours",
    "Staleness": "stale_minutes",
}


class AlertRuleForm(
    TablerFormMixin, SlugFromNameMixin, TeamChoiceMixin, SectionedFormMixin, forms.ModelForm
):
    sections = RULE_SECTIONS

    class Meta:
        model = AlertRule
        fields = [name for _title, names in RULE_SECTIONS for name in names]

    def __init__(self, *args, user, **kwargs):
        # Which kinds show a threshold comes from the evaluators registered now.
        self.section_conditions = {
            title: ("kind", _section_kinds(name)) for title, name in THRESHOLD_SECTIONS.items()
        }
        super().__init__(*args, user=user, **kwargs)
        scope = scope_of(user)
        # The blank choice is no kind: it has no evaluator to lack.
        self.fields["kind"].choices = [
            (value, _kind_label(value, label) if value else label)
            for value, label in self.fields["kind"].choices
        ]
        self.fields["channel"].queryset = AlertChannel.objects.in_scope(scope).order_by("name")
        self.fields["pool"].queryset = Pool.objects.active().in_scope(scope).order_by("name")
        self.fields["pool"].empty_label = gettext("Every pool")
        self.fields["workload"].queryset = (
            Workload.objects.active().in_scope(scope).order_by("name")
        )
        self.fields["workload"].empty_label = gettext("Every workload")

    def save(self, commit=True):
        rule = super().save(commit=False)
        if rule.pk is None:
            rule.created_by = self.user
        return services.save_rule(rule)

    def clean(self):
        cleaned = super().clean()
        kind = cleaned.get("kind")
        if kind:
            errors = rule_errors(
                kind=kind,
                thresholds={name: cleaned.get(name) for name in registry.THRESHOLD_FIELDS},
                channel=cleaned.get("channel"),
                team=cleaned.get("team"),
                pool=cleaned.get("pool"),
                workload=cleaned.get("workload"),
            )
            for name, message in errors.items():
                if name not in self.errors:
                    self.add_error(name, message)
        return cleaned


def _kind_label(value: str, label) -> str:
    reason = registry.unavailable_reason(value)
    if reason is None:
        return label
    return gettext("%(kind)s (%(reason)s)") % {"kind": label, "reason": gettext(reason)}


CHANNEL_SECTIONS = (
    (_("Channel"), ["name", "slug", "kind", "enabled", "language", "team"]),
    (_("Webhook or chat"), ["url"]),
    (_("Email"), ["to"]),
)


class AlertChannelForm(
    TablerFormMixin, SlugFromNameMixin, TeamChoiceMixin, SectionedFormMixin, forms.ModelForm
):
    sections = CHANNEL_SECTIONS
    section_conditions = {
        "Webhook or chat": ("kind", [AlertChannel.Kind.WEBHOOK, AlertChannel.Kind.SLACK]),
        "Email": ("kind", [AlertChannel.Kind.EMAIL]),
    }

    class Meta:
        model = AlertChannel
        fields = [name for _title, names in CHANNEL_SECTIONS for name in names]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("kind"):
            for name, message in channel_errors(
                kind=cleaned["kind"], url=cleaned.get("url", ""), to=cleaned.get("to", "")
            ).items():
                if name not in self.errors:
                    self.add_error(name, message)
        return cleaned


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs):
        super().__init__(format="%Y-%m-%dT%H:%M", **kwargs)


def parse_matchers(text: str) -> dict[str, str]:
    """``pool=infer-h100, kind=idle_cost`` → a dict; raises ValueError naming the part
    that is not ``label=value``."""
    matchers = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, equals, value = part.partition("=")
        name, value = name.strip(), value.strip().strip('"')
        if not equals or not name or not value or not name.replace("_", "a").isalnum():
            raise ValueError(part)
        matchers[name] = value
    return matchers


class SilenceForm(TablerFormMixin, TeamChoiceMixin, forms.ModelForm):
    matchers_text = forms.CharField(
        label=_("Matchers"),
        required=False,
        help_text=_(
            "label=value pairs separated by commas, e.g. pool=infer-h100, kind=idle_cost; an "
            "alert is silenced when its labels hold them all."
        ),
    )

    class Meta:
        model = Silence
        fields = ["rule", "matchers_text", "team", "starts_at", "ends_at", "comment"]
        widgets = {
            "starts_at": DateTimeLocalInput(),
            "ends_at": DateTimeLocalInput(),
            "comment": forms.Textarea(attrs={"rows": 3}),
        }

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, user=user, **kwargs)
        zone = timezone.get_current_timezone_name()
        self.fields["starts_at"].label = gettext("Starts at (%(zone)s)") % {"zone": zone}
        self.fields["ends_at"].label = gettext("Ends at (%(zone)s)") % {"zone": zone}
        rules = AlertRule.objects.in_scope(scope_of(user)).order_by("name")
        if not may_manage_fleet_wide(user):
            rules = rules.filter(team__isnull=False)
        self.fields["rule"].queryset = rules
        self.fields["rule"].empty_label = gettext("Any rule: the matchers choose")
        self.fields["team"].help_text = gettext(
            "With a rule: the rule's team. Otherwise: a team's silence holds back only its "
            "rules' alerts."
        )

    def clean_matchers_text(self):
        try:
            return parse_matchers(self.cleaned_data.get("matchers_text", ""))
        except ValueError as error:
            raise forms.ValidationError(
                gettext("“%(part)s” is not label=value.") % {"part": error.args[0]}
            ) from None

    def clean(self):
        cleaned = super().clean()
        rule = cleaned.get("rule")
        if rule is not None:
            # A rule's silence belongs to the rule's team, whatever was chosen.
            cleaned["team"] = rule.team
            self.errors.pop("team", None)
        for name, message in silence_errors(
            rule=rule,
            matchers=cleaned.get("matchers_text") or {},
            team=cleaned.get("team"),
            starts_at=cleaned.get("starts_at"),
            ends_at=cleaned.get("ends_at"),
            now=timezone.now(),
        ).items():
            field = "matchers_text" if name == "matchers" else name
            if field not in self.errors:
                self.add_error(field, message)
        return cleaned

    def _post_clean(self):
        self.instance.matchers = self.cleaned_data.get("matchers_text") or {}
        self.instance.team = self.cleaned_data.get("team")
        super()._post_clean()
