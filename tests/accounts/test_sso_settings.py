"""Production settings with single sign-on configured, in a fresh interpreter: they pass
the deploy checks, and the provider's origin may receive forms (sign-out redirects to
its end-session endpoint, and browsers hold a form's redirects to form-action)."""

import json

from tests.test_settings_production import generated_secret_key, production_environment, run_python

SSO_ENVIRONMENT = {
    "OIDC_ISSUER": "https://id.example.com/realms/acme/",
    "OIDC_CLIENT_ID": "gpufleet",
    "OIDC_CLIENT_SECRET": "from-the-provider",
    "OIDC_PROVIDER_NAME": "Acme ID",
    "OIDC_OP_END_SESSION_ENDPOINT": "https://logout.example.com/end",
}


def _environment():
    return production_environment(
        SECRET_KEY=generated_secret_key(), ALLOWED_HOSTS="gpufleet.example.com", **SSO_ENVIRONMENT
    )


def test_production_settings_with_sso_pass_the_deploy_checks():
    result = run_python(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"], _environment()
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"


def test_the_providers_origins_may_receive_forms():
    code = (
        "import json, django; django.setup(); from django.conf import settings; "
        "print(json.dumps([settings.OIDC_ISSUER, "
        "settings.CONTENT_SECURITY_POLICY['DIRECTIVES']['form-action']]))"
    )
    result = run_python(["-c", code], _environment())
    assert result.returncode == 0, result.stderr
    issuer, form_action = json.loads(result.stdout.strip().splitlines()[-1])
    assert issuer == "https://id.example.com/realms/acme"
    assert form_action == ["'self'", "https://id.example.com", "https://logout.example.com"]
