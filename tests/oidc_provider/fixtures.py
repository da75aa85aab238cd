"""The real OpenID Connect provider of the SSO tests (server.js, panva/oidc-provider on
Node.js), started once per test session on a free port of 127.0.0.1, with gpufleet's
live server registered as its client.

``oidc_provider`` points gpufleet's settings at it for one test and puts the provider's
people back as ``ACCOUNTS`` lists them; ``provider.set_account("alice", groups=[...])``
changes what the provider says about someone from the next sign-in on.
"""

import copy
import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

PROVIDER_DIR = Path(__file__).resolve().parent
CLIENT_ID = "gpufleet-tests"
CLIENT_SECRET = "provider-side-secret-for-the-tests"
PROVIDER_NAME = "Test IdP"
# The provider's people: username → what it says about them.
ACCOUNTS = {
    "alice": {
        "sub": "7d0c5b1e-alice",
        "password": "alice-at-the-provider",
        "email": "alice@vision.example.com",
        "name": "Alice Martin",
        "groups": ["ml-vision"],
    },
    "bob": {
        "sub": "a41f9e02-bob",
        "password": "bob-at-the-provider",
        "email": "bob@finance.example.com",
        "name": "Bob Chen",
        "groups": ["finance"],
    },
    "carol": {
        "sub": "c3e8d771-carol",
        "password": "carol-at-the-provider",
        "email": "carol@ops.example.com",
        "name": "Carol Diaz",
        "groups": ["gpu-admins"],
    },
    "dave": {
        "sub": "d2b6a0f4-dave",
        "password": "dave-at-the-provider",
        "email": "dave@example.com",
        "name": "Dave Okafor",
        "groups": ["interns"],
    },
}
# The group mapping the tests load: OIDC_GROUP_MAPPING's syntax.
GROUP_MAPPING = "gpu-admins=admin;ml-vision=lead:vision;finance=finance"
START_SECONDS = 30


@dataclass
class OidcProvider:
    issuer: str
    accounts_path: Path
    log_path: Path

    client_id = CLIENT_ID
    client_secret = CLIENT_SECRET
    name = PROVIDER_NAME

    def reset(self):
        self.accounts_path.write_text(json.dumps(ACCOUNTS, indent=1))

    def set_account(self, username, **changes):
        accounts = json.loads(self.accounts_path.read_text())
        accounts[username] = {**accounts[username], **changes}
        self.accounts_path.write_text(json.dumps(accounts, indent=1))

    def password_of(self, username) -> str:
        return ACCOUNTS[username]["password"]


def _wait_for_issuer(process, log_path: Path) -> str:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the OIDC provider exited early:\n{log_path.read_text()}")
        for line in log_path.read_text().splitlines():
            if line.startswith("listening "):
                return line.split(" ", 1)[1].strip()
        time.sleep(0.05)
    pytest.fail(f"the OIDC provider did not start within {START_SECONDS} s")


def _wait_for_discovery(issuer: str) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        try:
            response = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=2)
            if response.ok and response.json()["issuer"] == issuer:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    pytest.fail(f"{issuer} served no discovery document within {START_SECONDS} s")


@pytest.fixture(scope="session")
def oidc_provider_process(live_server, tmp_path_factory):
    """The provider, for the whole session; gpufleet's live server is its client."""
    from tests.conftest import ARTIFACTS_DIR, XDIST_WORKER

    node = shutil.which("node")
    if node is None:
        pytest.fail("The SSO tests need Node.js 20.19 or newer (node on PATH).")
    if not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        pytest.fail("Run `npm ci` in tests/oidc_provider first (make test does).")
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    log_path = ARTIFACTS_DIR / f"{XDIST_WORKER or 'main'}-oidc-provider.log"
    accounts_path = tmp_path_factory.mktemp("oidc") / "accounts.json"
    accounts_path.write_text(json.dumps(ACCOUNTS))
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                node,
                "server.js",
                "--port=0",
                f"--client-id={CLIENT_ID}",
                f"--client-secret={CLIENT_SECRET}",
                f"--redirect-uri={live_server.url}/oidc/callback/",
                f"--post-logout-redirect-uri={live_server.url}/login/",
                f"--accounts={accounts_path}",
            ],
            cwd=PROVIDER_DIR,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        issuer = _wait_for_issuer(process, log_path)
        _wait_for_discovery(issuer)
        yield OidcProvider(issuer=issuer, accounts_path=accounts_path, log_path=log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
def oidc_provider(oidc_provider_process, settings):
    """gpufleet signs in with the session's provider for this test, whose people are as
    ``ACCOUNTS`` says."""
    from config.settings import sso_form_action

    provider = oidc_provider_process
    provider.reset()
    settings.OIDC_ISSUER = provider.issuer
    settings.OIDC_RP_CLIENT_ID = provider.client_id
    settings.OIDC_RP_CLIENT_SECRET = provider.client_secret
    settings.OIDC_PROVIDER_NAME = provider.name
    settings.CONTENT_SECURITY_POLICY = sso_form_action(
        copy.deepcopy(settings.CONTENT_SECURITY_POLICY), provider.issuer
    )
    return provider
