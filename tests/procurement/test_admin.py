"""The admin pages of procurement read their related rows once, not once per row."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.procurement.models import ComparisonExport, ScenarioOption


def _queries(client, url):
    # A first request fills process-wide caches (content types, for one), so each count
    # is of a second request: what varies with the rows shown, nothing else.
    client.get(url)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries), response.content.decode()


@pytest.fixture
def admin_client_(client, db):
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "x"))
    return client


@pytest.mark.django_db
def test_export_changelist_queries_do_not_grow_with_rows(admin_client_, make_user, scenario):
    url = reverse("admin:procurement_comparisonexport_changelist")
    ComparisonExport.objects.create(
        scenario=scenario, format="csv", created_by=make_user("procurement")
    )
    few, _ = _queries(admin_client_, url)
    for _ in range(5):
        ComparisonExport.objects.create(
            scenario=scenario, format="pdf", created_by=make_user("procurement")
        )
    many, _ = _queries(admin_client_, url)
    assert many == few


@pytest.mark.django_db
def test_option_inlines_read_their_choices_once(admin_client_, scenario):
    url = reverse("admin:procurement_scenario_change", args=[scenario.pk])
    few, _ = _queries(admin_client_, url)
    gpu = scenario.options.first().gpu_model
    for index in range(4):
        ScenarioOption.objects.create(
            scenario=scenario, name=f"Extra {index}", kind="on_demand", gpu_model=gpu
        )
    many, page = _queries(admin_client_, url)
    assert many == few
    assert f'<option value="{gpu.pk}" selected>' in page
