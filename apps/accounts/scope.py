"""What a user may see: everything, or their teams' objects and the shared ones.

Superusers and the fleet-wide roles (Finance) see the whole fleet. Everyone else sees the
objects of the teams they belong to and the objects that belong to no team (shared). An
object outside a user's scope answers 404, as NetBox answers for another tenant's object,
so its existence is not disclosed.

A scope is computed once per request (``scope_of``) and is a plain value: it keys caches
(``cache_key``) and travels to workers, which compute a background report for exactly
the scope of the user who asked.
"""

from dataclasses import dataclass

from django.db.models import Q

from apps.core.roles import FLEET_WIDE_ROLE_NAMES


@dataclass(frozen=True)
class Scope:
    everything: bool
    team_ids: frozenset[int] = frozenset()

    @property
    def cache_key(self) -> str:
        """``all``, or the team ids in order (``t``, ``t3.7``): equal scopes share caches."""
        if self.everything:
            return "all"
        return "t" + ".".join(str(team_id) for team_id in sorted(self.team_ids))

    @classmethod
    def from_cache_key(cls, key: str) -> "Scope":
        if key == "all":
            return cls(everything=True)
        if not key.startswith("t"):
            raise ValueError(f"not a scope key: {key!r}")
        ids = key[1:]
        return cls(everything=False, team_ids=frozenset(int(i) for i in ids.split(".") if i))

    def covers_team(self, team_id: int | None) -> bool:
        """An object of this team (None: shared) is in scope."""
        return self.everything or team_id is None or team_id in self.team_ids

    def team_filter(self, field: str = "team") -> Q:
        """``Q`` keeping rows whose ``field`` (a team foreign key) is in scope."""
        if self.everything:
            return Q()
        return Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__in": sorted(self.team_ids)})


EVERYTHING = Scope(everything=True)


def scope_of(user) -> Scope:
    """The scope of ``user`` (memoised on the user object for the request)."""
    cached = getattr(user, "_gpufleet_scope", None)
    if cached is not None:
        return cached
    if not user.is_authenticated:
        scope = Scope(everything=False)
    elif user.is_superuser or user.groups.filter(name__in=FLEET_WIDE_ROLE_NAMES).exists():
        scope = EVERYTHING
    else:
        scope = Scope(everything=False, team_ids=frozenset(user.teams.values_list("id", flat=True)))
    user._gpufleet_scope = scope
    return scope
