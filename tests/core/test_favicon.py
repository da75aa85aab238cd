"""Browsers ask for /favicon.ico on every page that names no icon of its own (Django's
admin, the API's documentation); a 404 there is an error in their console."""

from django.conf import settings
from django.templatetags.static import static


def test_favicon_ico_is_the_sites_icon_for_anyone(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == static("favicon.svg")
    assert (settings.BASE_DIR / "static" / "favicon.svg").read_text().startswith("<svg")
