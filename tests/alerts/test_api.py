"""The alerts API: ``alert-rules`` and ``alert-channels`` by slug, read-only ``alerts`` and
writable ``silences``, by the roles that may, within the caller's team scope."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.accounts.models import ApiToken
from apps.alerts.models import AlertRule, Silence
from tests.alerts.factories import make_alert, make_channel, make_rule
from tests.factories import PoolFactory, TeamFactory, UserFactory


def _bearer(user, *, read_only=False):
    _, plaintext = ApiToken.issue(
        user=user, description="script", lifetime=timedelta(days=1), read_only=read_only
    )
    return {"Authorization": f"Bearer {plaintext}"}


@pytest.fixture
def bearer(db):
    def headers(role, *, teams=(), read_only=False):
        return _bearer(UserFactory(role=role, teams=teams), read_only=read_only)

    return headers


def post(client, path, body, headers):
    return client.post(path, body, content_type="application/json", headers=headers)


@pytest.mark.django_db
def test_ops_make_a_channel_and_a_lead_a_rule_on_it(client, bearer):
    channel = post(
        client,
        "/api/v1/alert-channels/",
        {"name": "Pager", "slug": "pager", "kind": "webhook", "url": "https://hooks.example.com/x"},
        bearer("ops"),
    )
    assert channel.status_code == 201, channel.content
    assert (
        post(
            client,
            "/api/v1/alert-channels/",
            {"name": "Other", "slug": "other", "kind": "email", "to": "a@example.com"},
            bearer("lead"),
        ).status_code
        == 403
    )
    rule = post(
        client,
        "/api/v1/alert-rules/",
        {
            "name": "Idle pools",
            "slug": "idle-pools",
            "kind": "idle_cost",
            "channel": "pager",
            "threshold_usd": "250.00",
            "window_hours": 24,
            "stale_minutes": 30,
        },
        bearer("lead"),
    )
    assert rule.status_code == 201, rule.content
    body = rule.json()
    assert (body["channel"], body["threshold_usd"], body["window_hours"]) == ("pager", "250.00", 24)
    assert body["stale_minutes"] is None, "a threshold the kind does not use is cleared"
    assert body["firing_count"] == 0 and body["team"] is None
    assert (
        post(
            client,
            "/api/v1/alert-rules/",
            {"name": "x", "slug": "x", "kind": "drill_overdue", "channel": "pager"},
            bearer("procurement"),
        ).status_code
        == 403
    )
    assert (
        post(
            client,
            "/api/v1/alert-rules/",
            {"name": "x", "slug": "x", "kind": "drill_overdue", "channel": "pager"},
            bearer("lead", read_only=True),
        ).status_code
        == 403
    )


@pytest.mark.django_db
def test_a_rule_is_refused_with_what_it_lacks(client, bearer):
    make_channel("Pager")
    headers = bearer("ops")
    missing = post(
        client,
        "/api/v1/alert-rules/",
        {"name": "Idle", "slug": "idle", "kind": "idle_cost", "channel": "pager"},
        headers,
    )
    assert missing.status_code == 400
    assert set(missing.json()) == {"threshold_usd", "window_hours"}
    budget = post(
        client,
        "/api/v1/alert-rules/",
        {
            "name": "Budget",
            "slug": "budget",
            "kind": "budget",
            "channel": "pager",
        },
        headers,
    )
    assert budget.status_code == 400
    assert set(budget.json()) == {"threshold_pct"}
    negative = post(
        client,
        "/api/v1/alert-rules/",
        {
            "name": "Low",
            "slug": "low",
            "kind": "low_utilisation",
            "channel": "pager",
            "threshold_pct": "120",
            "window_hours": 24,
        },
        headers,
    )
    assert negative.status_code == 400 and "threshold_pct" in negative.json()
    assert "at most 100" in negative.json()["threshold_pct"][0]
    for percentage, refused in (("0", True), ("120", False)):
        answer = post(
            client,
            "/api/v1/alert-rules/",
            {
                "name": f"Budget {percentage}",
                "slug": f"budget-{percentage}",
                "kind": "budget",
                "channel": "pager",
                "threshold_pct": percentage,
            },
            headers,
        )
        # 0 % would always fire; 120 % alerts on an overspend.
        assert (answer.status_code == 400) is refused, answer.json()
    unknown = post(
        client,
        "/api/v1/alert-rules/",
        {"name": "X", "slug": "x", "kind": "drill_overdue", "channel": "nowhere"},
        headers,
    )
    assert unknown.status_code == 400 and "channel" in unknown.json()
    no_url = post(
        client,
        "/api/v1/alert-channels/",
        {"name": "Chat", "slug": "chat", "kind": "slack"},
        headers,
    )
    assert no_url.status_code == 400 and "url" in no_url.json()
    bad_address = post(
        client,
        "/api/v1/alert-channels/",
        {"name": "Mail", "slug": "mail", "kind": "email", "to": "ops@example.com, not-an-address"},
        headers,
    )
    assert bad_address.json() == {"to": ["“not-an-address” is not an email address."]}


@pytest.mark.django_db
def test_team_members_work_within_their_teams(client):
    team_a, team_b = TeamFactory(name="Team A"), TeamFactory(name="Team B")
    pool_b = PoolFactory(team=team_b)
    make_channel("Shared pager")
    make_channel("B pager", team=team_b)
    member = _bearer(UserFactory(role="ops", teams=[team_a]))
    fleet_wide = post(
        client,
        "/api/v1/alert-rules/",
        {"name": "Fleet", "slug": "fleet", "kind": "drill_overdue", "channel": "shared-pager"},
        member,
    )
    assert fleet_wide.status_code == 400
    assert "give one of your teams (team-a)" in fleet_wide.json()["team"][0]
    mine = post(
        client,
        "/api/v1/alert-rules/",
        {
            "name": "Mine",
            "slug": "mine",
            "kind": "drill_overdue",
            "channel": "shared-pager",
            "team": "team-a",
        },
        member,
    )
    assert mine.status_code == 201, mine.content
    # Another team's slug, channel or pool does not exist for them.
    for body in (
        {"team": "team-b"},
        {"team": "team-a", "channel": "b-pager"},
        {"team": "team-a", "pool": pool_b.slug},
    ):
        refused = post(
            client,
            "/api/v1/alert-rules/",
            {
                "name": "No",
                "slug": "no",
                "kind": "drill_overdue",
                "channel": "shared-pager",
                **body,
            },
            member,
        )
        assert refused.status_code == 400, body
    rule_b = make_rule("B rule", team=team_b)
    assert client.get(f"/api/v1/alert-rules/{rule_b.slug}/", headers=member).status_code == 404
    listed = client.get("/api/v1/alert-rules/", headers=member).json()["results"]
    assert [row["slug"] for row in listed] == ["mine"]
    # The fleet-wide channel is theirs to use, not to change.
    patch = client.patch(
        "/api/v1/alert-channels/shared-pager/",
        {"enabled": False},
        content_type="application/json",
        headers=member,
    )
    assert patch.status_code == 403
    admin = _bearer(UserFactory(role="admin"))
    assert (
        client.patch(
            "/api/v1/alert-channels/shared-pager/",
            {"enabled": False},
            content_type="application/json",
            headers=admin,
        ).status_code
        == 200
    )


@pytest.mark.django_db
def test_a_channel_url_is_shown_whole_only_to_who_may_change_it(client, bearer):
    make_channel("Chat", kind="slack", url="https://hooks.slack.com/services/T0/B0/secret")
    reader = client.get("/api/v1/alert-channels/chat/", headers=bearer("reader")).json()
    assert reader["url"] == "https://hooks.slack.com/…"
    ops = client.get("/api/v1/alert-channels/chat/", headers=bearer("ops")).json()
    assert ops["url"] == "https://hooks.slack.com/services/T0/B0/secret"


@pytest.mark.django_db
def test_a_channel_in_use_is_not_deleted_and_a_deleted_rule_resolves(client, bearer):
    channel = make_channel("Pager")
    rule = make_rule("Overdue", channel=channel)
    alert = make_alert(rule, PoolFactory())
    headers = bearer("ops")
    in_use = client.delete("/api/v1/alert-channels/pager/", headers=headers)
    assert in_use.status_code == 409 and "alert rules" in in_use.json()["detail"]
    assert client.delete(f"/api/v1/alert-rules/{rule.slug}/", headers=headers).status_code == 204
    alert.refresh_from_db()
    assert (alert.rule, alert.status) == (None, "resolved")
    assert client.delete("/api/v1/alert-channels/pager/", headers=headers).status_code == 204


@pytest.mark.django_db
def test_alerts_are_read_only_and_filtered(client, bearer):
    rule = make_rule("Overdue")
    pool = PoolFactory()
    firing = make_alert(rule, pool)
    headers = bearer("reader")
    body = client.get("/api/v1/alerts/?status=firing", headers=headers).json()
    assert [row["id"] for row in body["results"]] == [firing.pk]
    row = body["results"][0]
    assert row["rule"] == rule.slug and row["labels"]["pool"] == pool.slug
    assert post(client, "/api/v1/alerts/", {}, bearer("admin")).status_code == 405


@pytest.mark.django_db
def test_silences_are_made_expired_and_refused_as_they_should(client, bearer):
    rule = make_rule("Overdue")
    headers = bearer("lead")
    ends = (timezone.now() + timedelta(hours=2)).isoformat()
    made = post(
        client,
        "/api/v1/silences/",
        {"matchers": {"pool": "infer-h100"}, "ends_at": ends, "comment": "Maintenance"},
        headers,
    )
    assert made.status_code == 201, made.content
    assert made.json()["active"] is True and made.json()["created_by"]
    by_rule = post(
        client,
        "/api/v1/silences/",
        {"rule": rule.slug, "ends_at": ends, "comment": "Known"},
        headers,
    )
    assert by_rule.status_code == 201
    past = post(
        client,
        "/api/v1/silences/",
        {
            "rule": rule.slug,
            "ends_at": (timezone.now() - timedelta(minutes=1)).isoformat(),
            "comment": "x",
        },
        headers,
    )
    assert past.json() == {"ends_at": ["A new silence ends in the future."]}
    everything = post(client, "/api/v1/silences/", {"ends_at": ends, "comment": "x"}, headers)
    assert "matchers" in everything.json()
    bad_label = post(
        client,
        "/api/v1/silences/",
        {"matchers": {"pool-name": "x"}, "ends_at": ends, "comment": "x"},
        headers,
    )
    assert bad_label.status_code == 400
    assert (
        post(
            client,
            "/api/v1/silences/",
            {"rule": rule.slug, "ends_at": ends, "comment": "x"},
            bearer("procurement"),
        ).status_code
        == 403
    )
    silence_id = made.json()["id"]
    expired = client.post(f"/api/v1/silences/{silence_id}/expire/", headers=bearer("ops"))
    assert expired.status_code == 200 and expired.json()["active"] is False
    assert (
        client.post(f"/api/v1/silences/{silence_id}/expire/", headers=bearer("reader")).status_code
        == 403
    )
    assert Silence.objects.get(pk=silence_id).ends_at <= timezone.now()


@pytest.mark.django_db
def test_the_channel_test_action_says_how_it_went(client, bearer, receiver):
    make_channel("Pager", url=receiver.url("/ok"))
    make_channel("Broken", url=receiver.url("/broken"))
    receiver.answer("/broken", 404)
    ok = client.post("/api/v1/alert-channels/pager/test/", headers=bearer("ops"))
    assert ok.json() == {"sent": True, "response_status": 200, "error": None}
    (sent,) = receiver.received("/ok")
    assert (
        sent["version"] == "4"
        and sent["alerts"][0]["labels"]["alertname"] == "gpufleet test notification"
    )
    broken = client.post("/api/v1/alert-channels/broken/test/", headers=bearer("ops")).json()
    assert broken["sent"] is False and "refused the notification with HTTP 404" in broken["error"]
    assert (
        client.post("/api/v1/alert-channels/pager/test/", headers=bearer("lead")).status_code == 403
    )


@pytest.mark.django_db
def test_a_rule_changed_to_another_kind_keeps_only_its_thresholds(client, bearer):
    rule = make_rule("Stale", kind="telemetry_stale", stale_minutes=30)
    response = client.patch(
        f"/api/v1/alert-rules/{rule.slug}/",
        {"kind": "flagged_hours", "window_hours": 12},
        content_type="application/json",
        headers=bearer("lead"),
    )
    assert response.status_code == 200, response.content
    rule = AlertRule.objects.get(pk=rule.pk)
    assert (rule.kind, rule.window_hours, rule.stale_minutes) == ("flagged_hours", 12, None)
