"""The requesting user's scope (apps/accounts/scope.py) applied to forms, filters and the
API of the apps that own team objects: pools and workloads here, and, through their pool
or workload, backups and telemetry.

What is out of scope is treated as absent: a page or API detail answers 404, a choice
field does not offer it and refuses it as an unknown choice, a slug naming it in the API
is "does not exist". Scope only narrows what a permission reaches: the pages check both
through one guard (apps/core/guard.py, 404 before 403).
"""

from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import Team
from apps.accounts.scope import Scope, scope_of
from apps.core.serializers import SlugReferenceField

# ``?team=shared``: the objects of no team (a team slug names a team's objects).
SHARED = "shared"
# What a form offers when it is not told whose it is: the shared objects and no team.
SHARED_ONLY = Scope(everything=False)


def teams_in(scope):
    """The teams a user with ``scope`` may give an object: their own, or every team for
    the fleet-wide."""
    if scope.everything:
        return Team.objects.order_by("name")
    return Team.objects.filter(pk__in=sorted(scope.team_ids)).order_by("name")


def limit_team_field(field, scope, *, empty_label) -> None:
    """A form's ``team`` choice field offering the teams of ``scope`` and none."""
    field.queryset = teams_in(scope)
    field.empty_label = empty_label
    field.required = False


def team_filter_choices(scope) -> list[tuple[str, str]]:
    """``?team=`` choices of a list: shared, then the teams in scope by name."""
    return [(SHARED, gettext("Shared (no team)"))] + [
        (team.slug, team.name) for team in teams_in(scope)
    ]


def team_condition(value: str, *, own: str, inherited: str | None = None) -> Q:
    """``Q`` keeping the objects of the team with slug ``value`` (``SHARED``: of none).
    ``own`` is the path of the object's team; ``inherited``, where the object takes its
    pool's team when it has none (workloads), the path of the pool's."""
    if value == SHARED:
        condition = Q(**{f"{own}__isnull": True})
        if inherited:
            condition &= Q(**{f"{inherited}__isnull": True})
        return condition
    condition = Q(**{f"{own}__slug": value})
    if inherited:
        condition |= Q(**{f"{own}__isnull": True, f"{inherited}__slug": value})
    return condition


# --- API ----------------------------------------------------------------------------------


class ScopedQuerysetMixin:
    """A viewset whose every read and write goes through the objects in the requesting
    user's scope (a token's user for a token), so an object out of scope is a 404 like a
    missing one. ``scope_filter(scope)`` says what is in scope."""

    def scope_filter(self, scope) -> Q:
        raise NotImplementedError

    def get_queryset(self):
        queryset = super().get_queryset()
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular reading the schema
            return queryset
        return queryset.filter(self.scope_filter(scope_of(self.request.user)))


class ScopedReferencesMixin:
    """A serializer whose references to team objects (``scoped_references``: field name →
    ``queryset_of(scope)``) accept only those in the requesting user's scope: a slug out
    of scope is refused in the very words a slug of nothing is."""

    scoped_references: dict = {}

    def get_fields(self):
        fields = super().get_fields()
        request = self.context.get("request")
        # drf-spectacular reads the fields of a view it makes up, with a user never saved.
        if request is None or getattr(self.context.get("view"), "swagger_fake_view", False):
            return fields
        scope = scope_of(request.user)
        for name, queryset_of in self.scoped_references.items():
            if name in fields and not fields[name].read_only:
                fields[name].queryset = queryset_of(scope)
        return fields


class TeamSlugField(SlugReferenceField):
    """``team``: a team's slug, or null for none. A user who is not fleet-wide may give
    one of their own teams only (400 naming the field, with the teams they may give)."""

    default_error_messages = {
        "not_yours": _(
            "You are not a member of team “{value}”: give one of your teams ({yours}) or null."
        ),
        "no_teams": _("You are not a member of team “{value}”: give null (no team)."),
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("slug_field", "slug")
        kwargs.setdefault("queryset", Team.objects.all())
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        team = super().to_internal_value(data)
        request = self.context.get("request")
        if request is None:
            return team
        scope = scope_of(request.user)
        if not scope.covers_team(team.pk):
            yours = list(teams_in(scope).values_list("slug", flat=True))
            if yours:
                self.fail("not_yours", value=team.slug, yours=", ".join(yours))
            self.fail("no_teams", value=team.slug)
        return team
