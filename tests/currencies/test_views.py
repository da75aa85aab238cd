"""The exchange rates page: list, form, delete with confirmation, CSV import; the pool
page's currency."""

from datetime import date
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.currencies.models import ExchangeRate


@pytest.fixture
def finance(client, make_user):
    user = make_user("finance")
    client.force_login(user)
    return user


@pytest.mark.django_db
def test_finance_adds_edits_and_deletes_a_rate_with_confirmation(client, finance):
    response = client.post(
        reverse("currencies:exchangerate_create"),
        {"month": "2026-10", "currency": "CNY", "units_per_usd": "7.1088", "source": "PBOC"},
    )
    assert response.status_code == 302, response.content
    rate = ExchangeRate.objects.get()
    assert (rate.month, rate.units_per_usd, rate.changed_by) == (
        date(2026, 10, 1),
        Decimal("7.1088"),
        finance,
    )
    page = client.get(reverse("currencies:exchangerate_list")).content.decode()
    assert "7.1088 CNY/USD" in page and "2026-10" in page

    bad = client.post(
        reverse("currencies:exchangerate_edit", kwargs={"pk": rate.pk}),
        {"month": "2026-13", "currency": "CNY", "units_per_usd": "7.2"},
    )
    assert bad.status_code == 200
    assert "Expected a month as YYYY-MM" in bad.content.decode()
    client.post(
        reverse("currencies:exchangerate_edit", kwargs={"pk": rate.pk}),
        {"month": "2026-10", "currency": "CNY", "units_per_usd": "7.2"},
    )
    rate.refresh_from_db()
    assert rate.units_per_usd == Decimal("7.2")
    assert rate.history.count() == 2  # the old rate is kept

    delete_url = reverse("currencies:exchangerate_delete", kwargs={"pk": rate.pk})
    assert client.get(delete_url).status_code == 200  # the confirmation
    assert ExchangeRate.objects.exists()
    client.post(delete_url)
    assert not ExchangeRate.objects.exists()


@pytest.mark.django_db
def test_the_page_imports_a_csv_or_names_the_wrong_line(client, finance):
    url = reverse("currencies:exchangerate_import")
    bad = SimpleUploadedFile("rates.csv", b"month,currency,units_per_usd\n2026-10,CNY,7,1\n")
    page = client.post(url, {"file": bad}, follow=True).content.decode()
    assert "Line 2: more fields than the header" in page
    assert not ExchangeRate.objects.exists()
    good = SimpleUploadedFile("rates.csv", b"month,currency,units_per_usd\n2026-10,CNY,7.1088\n")
    page = client.post(url, {"file": good}, follow=True).content.decode()
    assert "1 rates added, 0 updated." in page
    assert ExchangeRate.objects.get().units_per_usd == Decimal("7.1088")


@pytest.mark.django_db
def test_only_finance_imports(client, make_user):
    client.force_login(make_user("ops"))
    upload = SimpleUploadedFile("rates.csv", b"month,currency,units_per_usd\n2026-10,CNY,7.1\n")
    response = client.post(reverse("currencies:exchangerate_import"), {"file": upload})
    assert response.status_code == 403
    assert not ExchangeRate.objects.exists()


@pytest.mark.django_db
def test_the_pool_page_shows_its_currency_with_the_unit(client, make_user, gpu_model):
    from tests.factories import PoolFactory

    pool = PoolFactory(name="Shanghai", slug="shanghai", gpu_model=gpu_model, currency="CNY")
    client.force_login(make_user("lead"))
    page = client.get(reverse("pools:pool_detail", kwargs={"slug": pool.slug})).content.decode()
    assert "prices in CNY / GPU-hour" in page
    form = client.get(reverse("pools:pool_edit", kwargs={"slug": pool.slug})).content.decode()
    assert 'name="currency"' in form and "(pool currency)" in form


@pytest.mark.django_db
def test_pages_name_a_missing_rate_with_a_link_to_add_it(client, finance, gpu_model):
    from tests.factories import PoolFactory

    PoolFactory(name="Shanghai", slug="shanghai", gpu_model=gpu_model, currency="CNY")
    link = reverse("currencies:exchangerate_create") + "?currency=CNY&amp;month=2026-04"
    report = client.get(reverse("reports:report"), {"start": "2026-04-01", "end": "2026-04-02"})
    assert "Incomplete: exchange rates are missing" in report.content.decode()
    assert link in report.content.decode()
    showback = client.get(reverse("showback:showback"), {"month": "2026-04"})
    assert link in showback.content.decode()
