"""A person signing in at the test provider, driven over HTTP with requests: gpufleet's
sign-in link, the provider's form, and back through gpufleet's callback."""

import re
from urllib.parse import urljoin

import requests

FORM_ACTION = re.compile(r'<form[^>]*action="([^"]+)"')


def sign_in_over_http(live_server, provider, username, *, password=None, session=None):
    """``(session, response)`` after ``username`` signs in with SSO: the response is the
    page gpufleet lands them on (or the provider's, when it refused them)."""
    session = session or requests.Session()
    form = session.get(f"{live_server.url}/oidc/authenticate/", timeout=10)
    assert form.url.startswith(provider.issuer), form.url
    action = FORM_ACTION.search(form.text).group(1)
    response = session.post(
        urljoin(form.url, action),
        data={"username": username, "password": password or provider.password_of(username)},
        timeout=20,
    )
    return session, response


def csrf_token_of(session, live_server) -> str:
    page = session.get(f"{live_server.url}/", timeout=10)
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
