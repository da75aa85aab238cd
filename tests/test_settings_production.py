"""config.settings_production, each case in a fresh interpreter.

Production settings must refuse to start without SECRET_KEY, pass
``manage.py check --deploy --fail-level WARNING`` once given a real key and host, and
let the container healthcheck reach /healthz over plain HTTP despite the HTTPS redirect.
"""

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
# Settings that the caller's shell (or make test) might set and that these tests must
# not inherit: the point is to check what production gets by default.
INHERITED_SETTINGS = re.compile(r"^(SECRET_KEY|ALLOWED_HOSTS|DEBUG|SECURE_\w+|DJANGO_\w+)$")
TIMEOUT_SECONDS = 120


def production_environment(**overrides: str) -> dict[str, str]:
    environment = {
        key: value for key, value in os.environ.items() if not INHERITED_SETTINGS.match(key)
    }
    environment["DJANGO_SETTINGS_MODULE"] = "config.settings_production"
    environment.update(overrides)
    return environment


def run_python(args: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )


def generated_secret_key() -> str:
    key = secrets.token_urlsafe(45)
    assert len(key) == 60
    return key


def dotenv_sets_secret_key() -> bool:
    """config.settings reads a developer's .env; a key there defeats the missing-key test."""
    dotenv = REPO_ROOT / ".env"
    return dotenv.is_file() and bool(
        re.search(r"^\s*(export\s+)?SECRET_KEY\s*=\s*\S", dotenv.read_text(), re.MULTILINE)
    )


@pytest.mark.skipif(dotenv_sets_secret_key(), reason=".env in the repo root sets SECRET_KEY")
@pytest.mark.parametrize("secret_key", [None, ""], ids=["unset", "empty"])
def test_production_settings_refuse_to_start_without_secret_key(secret_key):
    environment = production_environment(ALLOWED_HOSTS="gpufleet.example.com")
    if secret_key is not None:
        environment["SECRET_KEY"] = secret_key
    result = run_python(["-c", "import django; django.setup()"], environment)
    assert result.returncode != 0, f"django.setup() succeeded without SECRET_KEY:\n{result}"
    assert "ImproperlyConfigured" in result.stderr
    assert "SECRET_KEY" in result.stderr, result.stderr


def test_production_settings_pass_the_deploy_checks():
    result = run_python(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        production_environment(
            SECRET_KEY=generated_secret_key(), ALLOWED_HOSTS="gpufleet.example.com"
        ),
    )
    assert result.returncode == 0, (
        f"manage.py check --deploy --fail-level WARNING exited {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )


# Runs in the subprocess: /healthz with the report stubbed (no database, broker or worker
# is touched), then a page, both over plain HTTP as the compose healthcheck sends them.
HEALTHZ_OVER_HTTP = """
import json
from unittest import mock

import django

django.setup()
from django.test import Client

client = Client()
with mock.patch("apps.core.views.health_report", return_value=({"status": "ok"}, 200)):
    health = client.get("/healthz", HTTP_HOST="gpufleet.example.com")
page = client.get("/", HTTP_HOST="gpufleet.example.com")
print(json.dumps({
    "healthz": health.status_code,
    "page": page.status_code,
    "location": page.get("Location", ""),
}))
"""


def test_healthz_answers_plain_http_while_pages_redirect_to_https():
    result = run_python(
        ["-c", HEALTHZ_OVER_HTTP],
        production_environment(
            SECRET_KEY=generated_secret_key(), ALLOWED_HOSTS="gpufleet.example.com"
        ),
    )
    assert result.returncode == 0, (
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )
    statuses = json.loads(result.stdout.strip().splitlines()[-1])
    assert statuses["healthz"] == 200, statuses
    assert statuses["page"] == 301, statuses
    assert statuses["location"] == "https://gpufleet.example.com/", statuses
