"""Single sign-on against a real OpenID Connect provider (tests/oidc_provider/, started on
localhost), driven over HTTP: the sign-in link, the provider's form, gpufleet's callback.
Nothing of the protocol is mocked: gpufleet discovers the provider, exchanges the code
with PKCE, checks the ID token's signature from the provider's JWKS and reads userinfo.

The group mapping is the example of docs/configuration.md, gpu-admins=admin;ml-vision=lead:vision;
finance=finance: alice is in ml-vision, bob in finance, carol in gpu-admins and dave in a
group nothing maps."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command

from apps.accounts.models import AuditEvent, OidcIdentity
from tests.accounts.sso_flow import csrf_token_of, sign_in_over_http
from tests.factories import TEST_PASSWORD, TeamFactory, UserFactory
from tests.oidc_provider.fixtures import ACCOUNTS, GROUP_MAPPING

User = get_user_model()


@pytest.fixture
def mapped(oidc_provider):
    """The teams the mapping names, and the mapping loaded as OIDC_GROUP_MAPPING would."""
    teams = {"vision": TeamFactory(name="Vision", slug="vision")}
    call_command("sync_group_mapping", mapping=GROUP_MAPPING, verbosity=0)
    return teams


def _roles(user) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


def _teams(user) -> set[str]:
    return set(user.teams.values_list("slug", flat=True))


def _signed_in_as(session, live_server) -> str:
    page = session.get(f"{live_server.url}/", timeout=10, allow_redirects=False)
    if page.status_code != 200:
        return ""
    return re.search(r'<div id="current-user">([^<]*)</div>', page.text).group(1)


def test_first_sign_in_creates_the_user_with_the_mapped_role_and_team(
    live_server, oidc_provider, mapped
):
    session, landing = sign_in_over_http(live_server, oidc_provider, "alice")

    assert landing.url == f"{live_server.url}/"
    assert 'id="current-roles">Technical lead<' in landing.text
    alice = User.objects.get(username="alice")
    assert (alice.email, alice.first_name) == ("alice@vision.example.com", "Alice Martin")
    assert not alice.has_usable_password(), "an SSO user has no gpufleet password"
    assert _roles(alice) == {"Technical lead"} and _teams(alice) == {"vision"}
    assert not alice.is_superuser and not alice.is_staff
    identity = OidcIdentity.objects.get(user=alice)
    assert (identity.issuer, identity.subject) == (oidc_provider.issuer, ACCOUNTS["alice"]["sub"])
    assert _signed_in_as(session, live_server) == "Alice Martin"

    events = list(
        AuditEvent.objects.filter(subject_user=alice)
        .order_by("pk")
        .values_list("kind", "method", "actor_username")
    )
    assert events == [
        ("role_granted", "sso", ""),
        ("team_joined", "sso", ""),
        ("sign_in", "sso", "alice"),
    ]
    sign_in = AuditEvent.objects.get(kind="sign_in", subject_user=alice)
    assert sign_in.sentence == "Signed in with Test IdP."
    assert sign_in.address == "127.0.0.1"


def test_second_sign_in_finds_the_user_by_subject_whatever_the_name_and_email(
    live_server, oidc_provider, mapped
):
    # A local account already holds the username and the address alice has at the
    # provider: SSO never takes it over.
    local = UserFactory(username="alice", email="alice@vision.example.com")
    sign_in_over_http(live_server, oidc_provider, "alice")
    sso_alice = User.objects.get(oidc_identities__subject=ACCOUNTS["alice"]["sub"])
    assert sso_alice.pk != local.pk and sso_alice.username == "alice-2"

    # At the provider alice is renamed and her email becomes the local account's other
    # user's; gpufleet still knows her by her subject.
    other = UserFactory(username="bob-local", email="alice.martin@example.com")
    oidc_provider.set_account(
        "alice", preferred_username="amartin", email="alice.martin@example.com"
    )
    session, _ = sign_in_over_http(live_server, oidc_provider, "alice")

    assert User.objects.filter(oidc_identities__isnull=False).count() == 1
    sso_alice.refresh_from_db()
    assert sso_alice.username == "alice-2" and sso_alice.email == "alice.martin@example.com"
    assert _signed_in_as(session, live_server) == "Alice Martin"
    other.refresh_from_db()
    assert other.email == "alice.martin@example.com" and not other.oidc_identities.exists()
    local.refresh_from_db()
    assert local.check_password(TEST_PASSWORD) and not local.oidc_identities.exists()


def test_leaving_a_group_takes_its_role_and_team_back_and_keeps_what_was_given_by_hand(
    live_server, oidc_provider, mapped
):
    sign_in_over_http(live_server, oidc_provider, "alice")
    alice = User.objects.get(username="alice")
    # By hand: a team and a role the mapping has nothing to do with.
    speech = TeamFactory(name="Speech", slug="speech")
    speech.members.add(alice)
    alice.groups.add(Group.objects.get(name="Ops"))

    oidc_provider.set_account("alice", groups=["some-other-group"])
    sign_in_over_http(live_server, oidc_provider, "alice")

    assert _roles(alice) == {"Ops"}
    assert _teams(alice) == {"speech"}
    taken_back = AuditEvent.objects.filter(subject_user=alice, method="sso").exclude(kind="sign_in")
    assert sorted(taken_back.values_list("kind", flat=True)) == [
        "role_granted",
        "role_revoked",
        "team_joined",
        "team_left",
    ]
    revoked = taken_back.get(kind="role_revoked")
    assert (
        revoked.actor is None and revoked.sentence == "alice no longer has the role Technical lead."
    )

    # Back in the group: back in the role and the team.
    oidc_provider.set_account("alice", groups=["ml-vision"])
    sign_in_over_http(live_server, oidc_provider, "alice")
    assert _roles(alice) == {"Ops", "Technical lead"}
    assert _teams(alice) == {"speech", "vision"}


def test_a_team_the_mapping_manages_follows_the_provider_even_when_added_by_hand(
    live_server, oidc_provider, mapped
):
    sign_in_over_http(live_server, oidc_provider, "bob")
    bob = User.objects.get(username="bob")
    assert _roles(bob) == {"Finance"} and _teams(bob) == set()
    mapped["vision"].members.add(bob)  # vision is given by ml-vision, which bob is not in

    sign_in_over_http(live_server, oidc_provider, "bob")

    assert _teams(bob) == set()
    assert _roles(bob) == {"Finance"}


def test_administrators_group_makes_a_superuser_and_leaving_it_unmakes_one(
    live_server, oidc_provider, mapped
):
    session, landing = sign_in_over_http(live_server, oidc_provider, "carol")
    carol = User.objects.get(username="carol")
    assert carol.is_superuser and carol.is_staff
    assert 'id="current-roles">Administrator<' in landing.text
    assert session.get(f"{live_server.url}/audit/", timeout=10).status_code == 200

    oidc_provider.set_account("carol", groups=[])
    session, _ = sign_in_over_http(live_server, oidc_provider, "carol")
    carol.refresh_from_db()
    assert not carol.is_superuser and not carol.is_staff
    assert session.get(f"{live_server.url}/audit/", timeout=10).status_code == 403
    assert list(
        AuditEvent.objects.filter(subject_user=carol, kind__startswith="role_")
        .order_by("pk")
        .values_list("kind", "detail__0__values__role__msgid")
    ) == [("role_granted", "Administrator"), ("role_revoked", "Administrator")]


def test_a_group_nothing_maps_gives_no_role_and_no_team(live_server, oidc_provider, mapped):
    session, landing = sign_in_over_http(live_server, oidc_provider, "dave")

    dave = User.objects.get(username="dave")
    assert _roles(dave) == set() and _teams(dave) == set() and not dave.is_superuser
    assert 'id="current-roles">Read-only<' in landing.text
    assert not AuditEvent.objects.filter(subject_user=dave, kind__startswith="role_").exists()


def test_a_wrong_password_at_the_provider_signs_nobody_in(live_server, oidc_provider, mapped):
    session, page = sign_in_over_http(live_server, oidc_provider, "alice", password="nope")

    assert page.url.startswith(oidc_provider.issuer)
    assert "Wrong username or password." in page.text
    assert not User.objects.filter(username="alice").exists()
    assert _signed_in_as(session, live_server) == ""


def test_a_refused_or_forged_callback_is_audited_and_signs_nobody_in(
    live_server, oidc_provider, mapped
):
    import requests

    session = requests.Session()
    denied = session.get(
        f"{live_server.url}/oidc/callback/?error=access_denied&state=whatever", timeout=10
    )
    assert denied.url == f"{live_server.url}/login/"
    assert "Sign-in with Test IdP did not succeed" in denied.text

    # A code and state gpufleet never asked for: its state is not in this session.
    sign_in_page = session.get(f"{live_server.url}/oidc/authenticate/", timeout=10)
    assert sign_in_page.url.startswith(oidc_provider.issuer)
    forged = session.get(f"{live_server.url}/oidc/callback/?code=abc&state=forged", timeout=10)
    assert forged.url == f"{live_server.url}/login/"
    assert _signed_in_as(session, live_server) == ""

    failures = AuditEvent.objects.filter(kind="sign_in_failed").order_by("pk")
    assert [(event.method, event.sentence) for event in failures] == [
        ("sso", "Sign-in with Test IdP failed: the provider answered access_denied."),
        (
            "sso",
            "Sign-in with Test IdP failed: the provider's answer was refused (OIDC callback "
            "state not found in session `oidc_states`!).",
        ),
    ]


def test_sign_out_ends_the_session_then_the_providers(live_server, oidc_provider, mapped):
    session, _ = sign_in_over_http(live_server, oidc_provider, "alice")

    answer = session.post(
        f"{live_server.url}/logout/",
        data={"csrfmiddlewaretoken": csrf_token_of(session, live_server)},
        headers={"Referer": f"{live_server.url}/"},
        allow_redirects=False,
        timeout=10,
    )

    assert answer.status_code == 302
    location = urlsplit(answer.headers["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == (
        f"{oidc_provider.issuer}/session/end"
    )
    query = parse_qs(location.query)
    assert query["post_logout_redirect_uri"] == [f"{live_server.url}/login/"]
    assert query["client_id"] == [oidc_provider.client_id]
    assert query["id_token_hint"][0].count(".") == 2, "the ID token, a JWT, as the hint"
    assert _signed_in_as(session, live_server) == ""
    sign_out = AuditEvent.objects.get(kind="sign_out")
    assert (sign_out.username, sign_out.method) == ("alice", "sso")


def test_sign_out_of_a_local_account_stays_in_gpufleet(client, live_server, oidc_provider):
    user = UserFactory(username="break-glass", role="admin")
    client.post("/login/", {"username": user.username, "password": TEST_PASSWORD})

    answer = client.post("/logout/")

    assert answer.status_code == 302 and answer.url == "/login/"


def test_the_sign_in_page_offers_the_provider_only_while_sso_is_on(client, settings, db):
    settings.OIDC_ISSUER = ""
    page = client.get("/login/").content.decode()
    assert 'id="sso-sign-in"' not in page
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=a&state=b").status_code == 404

    settings.OIDC_ISSUER = "https://idp.example.com/realms/gpufleet"
    settings.OIDC_PROVIDER_NAME = "Keycloak"
    page = client.get("/login/?next=/pools/").content.decode()
    assert re.search(
        r'<a href="/oidc/authenticate/\?next=/pools/" class="btn w-100" id="sso-sign-in">'
        r"Sign in with Keycloak</a>",
        page,
    )
    assert 'id="id_username"' in page, "the local form stays, for the break-glass admin"
