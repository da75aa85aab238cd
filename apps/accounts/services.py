"""Writes that touch several models: the SSO sign-in (user, identity, roles, teams) and
the group mapping (its rows and their audit events)."""

import re
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from apps.accounts import audit
from apps.accounts.models import AuditEvent, GroupMapping, MappedRole, OidcIdentity, Team
from apps.core.roles import FINANCE, OPS, PROCUREMENT, TECHNICAL_LEAD
from apps.core.sentences import Sentence, gettext_noop, sentence

# A mapped role → the auth group holding it (Administrator is a flag, not a group).
ROLE_GROUPS = {
    MappedRole.LEAD: TECHNICAL_LEAD.name,
    MappedRole.OPS: OPS.name,
    MappedRole.PROCUREMENT: PROCUREMENT.name,
    MappedRole.FINANCE: FINANCE.name,
}
# ...and the English names (msgids) the audit log says them by.
ROLE_NAMES = {**ROLE_GROUPS, MappedRole.ADMIN: audit.ADMINISTRATOR}
USERNAME_MAX_LENGTH = 150
# What Django's username validator accepts: letters, digits and @ . + - _.
NOT_IN_USERNAMES = re.compile(r"[^\w.@+-]")


# --- SSO sign-in --------------------------------------------------------------------------


def _username_from(claims: dict) -> str:
    wanted = str(claims.get("preferred_username") or "").strip()
    if not wanted:
        wanted = str(claims.get("email") or "").split("@", 1)[0]
    wanted = NOT_IN_USERNAMES.sub("-", wanted).strip("-.") or "user"
    return wanted[: USERNAME_MAX_LENGTH - 6]


def unique_username(wanted: str) -> str:
    """``wanted``, or ``wanted-2``, ``wanted-3``… when a user (of any letter case) has it:
    a provider's ``admin`` never becomes gpufleet's break-glass ``admin``."""
    users = get_user_model().objects
    candidate, number = wanted, 1
    while users.filter(username__iexact=candidate).exists():
        number += 1
        candidate = f"{wanted}-{number}"
    return candidate


@transaction.atomic
def sso_sign_in(*, issuer: str, claims: dict, idp_groups: set[str]):
    """The user of an SSO sign-in: found by (issuer, ``sub``), made on the first sign-in,
    names and email refreshed from the claims, roles and teams set by the group mapping."""
    identity = (
        OidcIdentity.objects.select_for_update()
        .select_related("user")
        .filter(issuer=issuer, subject=claims["sub"])
        .first()
    )
    if identity is None:
        user = get_user_model().objects.create_user(
            unique_username(_username_from(claims)), email=claims.get("email") or ""
        )
        identity = OidcIdentity.objects.create(user=user, issuer=issuer, subject=claims["sub"])
    user = identity.user
    _refresh_profile(user, claims)
    apply_group_mapping(user=user, identity=identity, idp_groups=idp_groups)
    identity.last_sign_in_at = timezone.now()
    identity.save(update_fields=["mapped_roles", "mapped_team_ids", "last_sign_in_at"])
    return user


def _refresh_profile(user, claims: dict) -> None:
    first_name = str(claims.get("given_name") or claims.get("name") or "")[:150]
    last_name = str(claims.get("family_name") or "")[:150]
    email = str(claims.get("email") or "")[:254]
    changed = {
        field: value
        for field, value in (("first_name", first_name), ("last_name", last_name), ("email", email))
        if value and getattr(user, field) != value
    }
    if changed:
        for field, value in changed.items():
            setattr(user, field, value)
        user.save(update_fields=list(changed))


def apply_group_mapping(*, user, identity: OidcIdentity, idp_groups: set[str]) -> None:
    """Set the user's SSO-given roles and teams to exactly what the mapping gives for
    ``idp_groups``.

    A role or team is the mapping's when a mapping row names it, or when the mapping gave
    it at the last sign-in (``identity.mapped_*``). Those are granted or taken back to
    match; roles and teams the mapping has nothing to do with (given by hand) stay. The
    changes are audited as the SSO sign-in's, with no actor.
    """
    rows = list(GroupMapping.objects.all())
    given = [row for row in rows if row.idp_group in idp_groups]
    wanted_roles = {row.role for row in given if row.role}
    managed_roles = {row.role for row in rows if row.role} | set(identity.mapped_roles)
    wanted_teams = {row.team_id for row in given if row.team_id}
    managed_teams = {row.team_id for row in rows if row.team_id} | set(identity.mapped_team_ids)

    with audit.acting(method=AuditEvent.Method.SSO, acting_user=False):
        _set_role_groups(user, wanted=wanted_roles, managed=managed_roles)
        _set_administrator(user, wanted=wanted_roles, managed=managed_roles)
        _set_teams(user, wanted=wanted_teams, managed=managed_teams)
    identity.mapped_roles = sorted(wanted_roles)
    identity.mapped_team_ids = sorted(wanted_teams)


def _set_role_groups(user, *, wanted: set[str], managed: set[str]) -> None:
    names = {key: name for key, name in ROLE_GROUPS.items() if key in managed}
    groups = {group.name: group for group in Group.objects.filter(name__in=names.values())}
    held = set(user.groups.filter(name__in=names.values()).values_list("name", flat=True))
    to_add = [groups[name] for key, name in names.items() if key in wanted and name not in held]
    to_remove = [groups[name] for key, name in names.items() if key not in wanted and name in held]
    if to_remove:
        user.groups.remove(*to_remove)
    if to_add:
        user.groups.add(*to_add)


def _set_administrator(user, *, wanted: set[str], managed: set[str]) -> None:
    if MappedRole.ADMIN not in managed:
        return
    administrator = MappedRole.ADMIN in wanted
    if user.is_superuser == administrator and user.is_staff == administrator:
        return
    was_superuser = user.is_superuser
    user.is_superuser = user.is_staff = administrator
    user.save(update_fields=["is_superuser", "is_staff"])
    if was_superuser != administrator:
        audit.record_role_change(user, audit.ADMINISTRATOR, granted=administrator)


def _set_teams(user, *, wanted: set[int], managed: set[int]) -> None:
    held = set(user.teams.filter(pk__in=managed).values_list("pk", flat=True))
    to_remove = held - wanted
    to_add = Team.objects.filter(pk__in=wanted - held)
    if to_remove:
        user.teams.remove(*to_remove)
    if to_add:
        user.teams.add(*to_add)


# --- The group mapping ----------------------------------------------------------------------


def target_sentence(role: str, team_name: str | None) -> Sentence:
    """What a mapping row gives, said in the reader's language."""
    role_label = audit.role_label(ROLE_NAMES[role]) if role else None
    if role_label and team_name:
        return sentence(
            gettext_noop("%(role)s and the team %(team)s"), role=role_label, team=team_name
        )
    if role_label:
        return role_label
    return sentence(gettext_noop("the team %(team)s"), team=team_name or "")


def _mapping_sentence(msgid: str, mapping: GroupMapping, **values) -> Sentence:
    target = target_sentence(mapping.role, mapping.team.name if mapping.team_id else None)
    return sentence(msgid, group=mapping.idp_group, target=target, **values)


@transaction.atomic
def save_group_mapping(mapping: GroupMapping, *, previous: GroupMapping | None = None):
    """Save a new or changed row and audit it; ``previous`` is the row as it was."""
    mapping.save()
    if previous is None:
        detail = _mapping_sentence(gettext_noop("Group %(group)s now gives %(target)s."), mapping)
    else:
        was = target_sentence(previous.role, previous.team.name if previous.team_id else None)
        detail = _mapping_sentence(
            gettext_noop(
                "Group mapping changed: %(group)s gives %(target)s (was %(previous_group)s: "
                "%(previous)s)."
            ),
            mapping,
            previous_group=previous.idp_group,
            previous=was,
        )
    audit.record(AuditEvent.Kind.MAPPING_CHANGED, detail=detail)
    return mapping


@transaction.atomic
def delete_group_mapping(mapping: GroupMapping) -> None:
    detail = _mapping_sentence(gettext_noop("Group %(group)s no longer gives %(target)s."), mapping)
    mapping.delete()
    audit.record(AuditEvent.Kind.MAPPING_CHANGED, detail=detail)


@dataclass(frozen=True)
class MappingEntry:
    """One ``group=role:team`` entry of OIDC_GROUP_MAPPING."""

    idp_group: str
    role: str
    team_slug: str


class MappingSyntaxError(ValueError):
    pass


def parse_group_mapping(text: str) -> list[MappingEntry]:
    """``gpu-admins=admin;ml-vision=lead:vision;finance=finance;ml-audio=:audio``: entries
    split by ``;`` (or new lines), each ``group=role``, ``group=role:team-slug`` or
    ``group=:team-slug``."""
    entries = []
    for raw in re.split(r"[;\n]", text):
        entry = raw.strip()
        if not entry:
            continue
        group, separator, target = entry.rpartition("=")
        role, _, team_slug = target.partition(":")
        group, role, team_slug = group.strip(), role.strip(), team_slug.strip()
        if not separator or not group or not (role or team_slug):
            raise MappingSyntaxError(f"{entry!r}: write group=role, group=role:team or group=:team")
        if role and role not in MappedRole.values:
            raise MappingSyntaxError(
                f"{entry!r}: the role must be one of {', '.join(MappedRole.values)}"
            )
        entries.append(MappingEntry(group, role, team_slug))
    return entries


@transaction.atomic
def sync_group_mapping(entries: list[MappingEntry], *, replace: bool = False) -> dict:
    """Add the entries the table lacks; with ``replace``, remove the rows that are not
    entries. An entry naming a team that does not exist is skipped and said so in the
    audit log. Returns the counts: ``added``, ``removed``, ``kept``, ``missing_teams``."""
    teams = {team.slug: team for team in Team.objects.all()}
    rows = list(GroupMapping.objects.select_related("team"))
    wanted_keys = set()
    counts = {"added": 0, "removed": 0, "kept": 0, "missing_teams": []}
    for entry in entries:
        team = teams.get(entry.team_slug) if entry.team_slug else None
        if entry.team_slug and team is None:
            counts["missing_teams"].append(entry.team_slug)
            audit.record(
                AuditEvent.Kind.MAPPING_CHANGED,
                detail=sentence(
                    gettext_noop(
                        "The group mapping entry for %(group)s names the team %(team)s, which "
                        "does not exist: the entry was skipped."
                    ),
                    group=entry.idp_group,
                    team=entry.team_slug,
                ),
            )
            continue
        key = (entry.idp_group, entry.role, team.pk if team else None)
        wanted_keys.add(key)
        if any((row.idp_group, row.role, row.team_id) == key for row in rows):
            counts["kept"] += 1
            continue
        save_group_mapping(GroupMapping(idp_group=entry.idp_group, role=entry.role, team=team))
        counts["added"] += 1
    if replace:
        for row in rows:
            if (row.idp_group, row.role, row.team_id) not in wanted_keys:
                delete_group_mapping(row)
                counts["removed"] += 1
    return counts


def load_group_mapping_after_migrate(sender, **kwargs):
    """Receiver of post_migrate: the rows of OIDC_GROUP_MAPPING that the table lacks (a
    malformed value stops the migrate, saying why)."""
    from django.conf import settings

    if settings.OIDC_GROUP_MAPPING:
        sync_group_mapping(parse_group_mapping(settings.OIDC_GROUP_MAPPING))
