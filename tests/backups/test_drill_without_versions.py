"""A drill restores a registered, kept version: without one the policy page and the drill
form say what to register first and link to it, instead of a form that answers
"required"; the drill form's own errors say what to type."""

from datetime import timedelta
from html import unescape

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.backups.forms import RestoreDrillForm
from apps.backups.models import RestoreDrill
from tests.backups.factories import make_policy, make_version

pytestmark = pytest.mark.django_db

NO_VERSION = "Register a version of this policy's software before recording a drill: "


def test_the_policy_page_says_to_register_a_version_first(client, make_user, workload):
    policy = make_policy(workload)
    client.force_login(make_user("ops"))
    page = unescape(client.get(policy.get_absolute_url()).content.decode())
    add_url = reverse("backups:version_create", kwargs={"slug": workload.slug})
    assert NO_VERSION in page
    assert f'<a href="{add_url}" id="drill-blocked-link">Add a version →</a>' in page
    assert 'id="drill-form"' not in page  # no form whose version list is empty
    # The versions card's empty state offers the same page.
    assert f'href="{add_url}" class="btn btn-primary">Register a version</a>' in page


def test_posting_a_drill_without_versions_explains_instead_of_required(client, make_user, workload):
    make_policy(workload)
    client.force_login(make_user("ops"))
    url = reverse("backups:drill_create", kwargs={"slug": workload.slug})
    start = timezone.now() - timedelta(minutes=30)
    data = {
        "restored_from_tier": "hot",
        "started_at": start.strftime("%Y-%m-%dT%H:%M"),
        "finished_at": (start + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M"),
        "outcome": "restored",
    }
    swapped = client.post(url, data, headers={"HX-Request": "true", "HX-Target": "compliance"})
    body = unescape(swapped.content.decode())
    assert swapped.status_code == 200 and 'id="compliance"' in body
    assert NO_VERSION in body and "required" not in body.lower()
    plain = client.post(url, data)
    assert plain.status_code == 400 and NO_VERSION in unescape(plain.content.decode())
    assert NO_VERSION in unescape(client.get(url).content.decode())
    assert not RestoreDrill.objects.exists()


def test_only_purged_versions_say_so(client, make_user, workload):
    policy = make_policy(workload)
    make_version(workload, purged_at=timezone.now() - timedelta(days=1))
    client.force_login(make_user("ops"))
    page = unescape(client.get(policy.get_absolute_url()).content.decode())
    assert (
        "Every registered version of this policy's software was purged: register one "
        "that is still kept before recording a drill: "
    ) in page
    assert 'id="drill-blocked-link">Add a version →</a>' in page


def test_a_reader_is_told_who_registers_versions(client, make_user, workload):
    policy = make_policy(workload)
    client.force_login(make_user("lead"))  # reads, records nothing
    page = client.get(policy.get_absolute_url()).content.decode()
    assert "Register a version of this policy" not in page  # no drill form to explain
    assert "Add a version →" not in page


def test_drill_form_errors_say_what_to_type(workload):
    policy = make_policy(workload)
    make_version(workload)
    form = RestoreDrillForm({"started_at": "yesterday"}, policy=policy)
    assert not form.is_valid()
    assert form.errors["version"] == ["Pick the version that was restored."]
    assert form.errors["restored_from_tier"] == ["Pick the tier the version was restored from."]
    assert form.errors["started_at"] == ["Type a date and time, e.g. 2026-12-01 14:30."]
    assert form.errors["finished_at"][0].startswith("Give when the service answered")
    assert form.errors["outcome"] == ["Pick the result of the restore."]
