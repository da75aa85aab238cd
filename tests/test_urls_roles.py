"""Every URL name × every role: anonymous users are sent to log in, roles get 200 or
403 exactly as apps/core/roles.py says, and htmx requests get a fragment, not a page.

A URL name added without an entry in ROUTES fails ``test_every_url_name_is_covered``,
so a new view cannot ship without its permission being tested.
"""

from datetime import date

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from apps.accounts.models import ApiToken
from apps.core.roles import OPS, PROCUREMENT, TECHNICAL_LEAD
from apps.pools.models import Interruption
from apps.reports.models import RecomputeJob
from apps.telemetry.models import HostnameRule, ImportRun

EVERYONE = "everyone"
SUPERUSER = "superuser"

# URL name → (kwargs kind, who may GET it: EVERYONE, SUPERUSER or a permission)
ROUTES = {
    "dashboard:overview": (None, EVERYONE),
    "backups:policy_list": (None, EVERYONE),
    "backups:policy_detail": ("backup_policy", EVERYONE),
    "backups:policy_create": ("workload", "backups.add_backuppolicy"),
    "backups:policy_edit": ("backup_policy", "backups.change_backuppolicy"),
    "backups:policy_delete": ("backup_policy", "backups.delete_backuppolicy"),
    "backups:drill_create": ("backup_policy", "backups.add_restoredrill"),
    "backups:drill_detail": ("restore_drill", EVERYONE),
    "backups:drill_delete": ("restore_drill", "backups.delete_restoredrill"),
    "backups:version_create": ("workload", "backups.add_backupversion"),
    "backups:version_detail": ("backup_version", EVERYONE),
    "backups:version_edit": ("backup_version", "backups.change_backupversion"),
    "backups:version_delete": ("backup_version", "backups.delete_backupversion"),
    "procurement:scenario_list": (None, EVERYONE),
    "procurement:scenario_detail": ("scenario", EVERYONE),
    "procurement:scenario_create": (None, "procurement.add_scenario"),
    "procurement:scenario_edit": ("scenario", "procurement.change_scenario"),
    "procurement:scenario_delete": ("scenario", "procurement.delete_scenario"),
    "procurement:option_create": ("scenario", "procurement.add_scenariooption"),
    "procurement:option_edit": ("scenario_option", "procurement.change_scenariooption"),
    "procurement:option_delete": ("scenario_option", "procurement.delete_scenariooption"),
    "procurement:price_import": ("scenario", "procurement.add_scenariooption"),
    "procurement:export_create": ("scenario", "procurement.add_comparisonexport"),
    "procurement:export_detail": ("export", EVERYONE),
    "core:user_list": (None, SUPERUSER),
    "pools:pool_list": (None, EVERYONE),
    "pools:pool_detail": ("pool", EVERYONE),
    "reports:pool_panel": ("pool", EVERYONE),
    "telemetry:pool_panel": ("pool", EVERYONE),
    "pools:pool_create": (None, "pools.add_pool"),
    "pools:pool_edit": ("pool", "pools.change_pool"),
    "pools:pool_delete": ("pool", "pools.delete_pool"),
    "pools:workload_list": (None, EVERYONE),
    "pools:workload_detail": ("workload", EVERYONE),
    "pools:workload_create": (None, "pools.add_workload"),
    "pools:workload_edit": ("workload", "pools.change_workload"),
    "pools:workload_delete": ("workload", "pools.delete_workload"),
    "pools:calculator": (None, EVERYONE),
    "catalog:gpu_model_list": (None, EVERYONE),
    "catalog:gpu_model_detail": ("gpu_model", EVERYONE),
    "catalog:gpu_model_create": (None, "catalog.add_gpumodel"),
    "catalog:gpu_model_edit": ("gpu_model", "catalog.change_gpumodel"),
    "catalog:gpu_model_delete": ("gpu_model", "catalog.delete_gpumodel"),
    "catalog:architecture_list": (None, EVERYONE),
    "catalog:architecture_detail": ("architecture", EVERYONE),
    "catalog:architecture_create": (None, "catalog.add_modelarchitecture"),
    "catalog:architecture_edit": ("architecture", "catalog.change_modelarchitecture"),
    "catalog:architecture_delete": ("architecture", "catalog.delete_modelarchitecture"),
    "telemetry:import_list": (None, EVERYONE),
    "telemetry:import_create": (None, "telemetry.add_importrun"),
    "telemetry:import_detail": ("import_run", EVERYONE),
    "telemetry:device_unassigned": (None, EVERYONE),
    "telemetry:reconciliation": (None, EVERYONE),
    "telemetry:rule_list": (None, EVERYONE),
    "telemetry:rule_create": (None, "telemetry.add_hostnamerule"),
    "telemetry:rule_delete": ("hostname_rule", "telemetry.delete_hostnamerule"),
    "reports:report": (None, EVERYONE),
    "reports:report_explain": (None, EVERYONE),
    "dashboard:overview_explain": (None, EVERYONE),
    "reports:recompute_detail": ("recompute_job", EVERYONE),
    "reports:interruption_list": (None, EVERYONE),
    "reports:interruption_create": (None, "pools.add_interruption"),
    "reports:interruption_detail": ("interruption", EVERYONE),
    "reports:interruption_edit": ("interruption", "pools.change_interruption"),
    "reports:interruption_delete": ("interruption", "pools.delete_interruption"),
    "accounts:token_list": (None, EVERYONE),
    "accounts:token_create": (None, EVERYONE),
    "accounts:token_delete": ("own_token", EVERYONE),
}
# REST endpoints: anonymous → 401; every signed-in role may read.
API_ROUTES = {
    "api-root": None,
    "api-me": None,
    "api-schema": None,
    "api-docs": None,
    "pool-list": None,
    "pool-detail": "pool",
    "workload-list": None,
    "workload-detail": "workload",
    "gpu-model-list": None,
    "gpu-model-detail": "gpu_model",
    "model-architecture-list": None,
    "model-architecture-detail": "architecture",
    "interruption-list": None,
    "interruption-detail": "interruption",
    "api-report-cost": None,
    "api-usage-profile": None,
    "api-reconciliation": None,
    "scenario-list": None,
    "scenario-detail": "scenario",
    "backup-policy-list": None,
    "backup-policy-detail": "backup_policy_api",
    "backup-version-list": None,
    "backup-version-detail": "backup_version",
    "restore-drill-list": None,
    "restore-drill-detail": "restore_drill",
}
# POST-only or query-required API endpoints, each walked by its own tests:
# tests/pools/test_estimates_api.py and tests/telemetry/test_api.py.
POST_ONLY_API = {
    "api-estimate-memory",
    "api-estimate-capacity-mix",
    "api-estimate-checkpoint-interval",
    "backup-version-checksums",
    "api-ingest-gpu",
    "api-ingest-requests",
    "api-usage-hourly",
    "api-usage-requests-hourly",
    # tests/pools/test_archive.py
    "pool-archive",
    "pool-restore",
    "workload-archive",
    "workload-restore",
}
# Not walked, with the reason.
EXCLUDED = {
    "login": "the login page itself is public",
    "logout": "POST-only; covered by the browser test",
    "healthz": "public JSON probe for load balancers; covered by test_health",
    "reports:recompute_create": "POST-only; covered by tests/reports/test_views.py",
    "telemetry:device_assign": "POST-only; covered by tests/telemetry/test_views.py",
    "pools:pool_archive": "POST-only; every role covered by tests/pools/test_archive.py",
    "pools:pool_restore": "POST-only; every role covered by tests/pools/test_archive.py",
    "pools:workload_archive": "POST-only; every role covered by tests/pools/test_archive.py",
    "pools:workload_restore": "POST-only; every role covered by tests/pools/test_archive.py",
    "procurement:export_download": "a streamed file; every role's download and the 404 "
    "without a file are covered by tests/procurement/test_exports.py",
    "backups:version_mark_stable": "POST-only; covered by tests/backups/test_views.py",
    "backups:drill_evidence": "a download, not a page; covered by tests/backups/test_views.py",
}
EXCLUDED_NAMESPACES = {"admin": "Django's admin checks is_staff itself"}

ROLE_KEYS = ["lead", "ops", "procurement", "reader", "admin"]


def _all_url_names(resolver=None, namespace=""):
    resolver = resolver or get_resolver()
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            child_namespace = pattern.namespace or ""
            if child_namespace in EXCLUDED_NAMESPACES:
                continue
            prefix = f"{namespace}{child_namespace}:" if child_namespace else namespace
            yield from _all_url_names(pattern, prefix)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}{pattern.name}"


def test_every_url_name_is_covered():
    names = set(_all_url_names())
    uncovered = names - set(ROUTES) - set(API_ROUTES) - set(EXCLUDED) - POST_ONLY_API
    assert not uncovered, f"URL names without a role expectation: {sorted(uncovered)}"
    stale = (set(ROUTES) | set(API_ROUTES)) - names
    assert not stale, f"ROUTES lists names that no longer exist: {sorted(stale)}"


def _role_may(role_key, user, rule) -> bool:
    if rule == EVERYONE:
        return True
    if rule == SUPERUSER:
        return user.is_superuser
    return user.has_perm(rule)


def _expected_from_roles_table(role_key, rule) -> bool:
    """The same answer, read from the roles table instead of the database."""
    if role_key == "admin" or rule == EVERYONE:
        return True
    if rule == SUPERUSER:
        return False
    role = {"lead": TECHNICAL_LEAD, "ops": OPS, "procurement": PROCUREMENT}.get(role_key)
    return role is not None and rule in role.permissions


def _url(name, kind, *, pool, workload, user):
    if kind is None:
        return reverse(name)
    if kind == "pool":
        return reverse(name, kwargs={"slug": pool.slug})
    if kind == "workload":
        return reverse(name, kwargs={"slug": workload.slug})
    if kind == "import_run":
        run = ImportRun.objects.create(
            kind="gpu", format="dcgm", source="upload", filename="walk.prom", pool=pool
        )
        return reverse(name, kwargs={"pk": run.pk})
    if kind == "hostname_rule":
        rule = HostnameRule.objects.create(pool=pool, hostname_pattern="walk-*")
        return reverse(name, kwargs={"pk": rule.pk})
    if kind == "gpu_model":
        return reverse(name, kwargs={"slug": pool.gpu_model.slug})
    if kind == "interruption":
        interruption = Interruption.objects.create(
            workload=workload, occurred_at=timezone.now(), cause="hardware", restart_minutes=5
        )
        return reverse(name, kwargs={"pk": interruption.pk})
    if kind == "recompute_job":
        job = RecomputeJob.objects.create(start_day=date(2026, 1, 1), end_day=date(2026, 1, 7))
        return reverse(name, kwargs={"pk": job.pk})
    if kind == "architecture":
        return reverse(name, kwargs={"slug": workload.model_architecture.slug})
    if kind in ("scenario", "scenario_option", "export"):
        return _procurement_url(name, kind, pool=pool)
    if kind in ("backup_policy", "backup_policy_api", "backup_version", "restore_drill"):
        return _backups_url(name, kind, workload=workload)
    if kind == "own_token":
        token, _ = ApiToken.issue(
            user=user, description="walk", lifetime=_one_day(), read_only=True
        )
        return reverse(name, kwargs={"key_id": token.key_id})
    raise AssertionError(kind)


def _procurement_url(name, kind, *, pool):
    from django.core.files.base import ContentFile

    from apps.procurement.models import ComparisonExport, Scenario, ScenarioOption

    scenario, _ = Scenario.objects.get_or_create(
        slug="walk-scenario",
        defaults={"name": "Walk scenario", "demand_source": "measured_pool", "demand_pool": pool},
    )
    if kind == "scenario":
        return reverse(name, kwargs={"slug": scenario.slug})
    if kind == "scenario_option":
        option, _ = ScenarioOption.objects.get_or_create(
            scenario=scenario,
            name="Walk on-demand",
            defaults={"kind": "on_demand", "gpu_model": pool.gpu_model, "source_pool": pool},
        )
        return reverse(name, kwargs={"slug": scenario.slug, "pk": option.pk})
    export = ComparisonExport.objects.create(scenario=scenario, format="csv", status="succeeded")
    export.file.save("walk.csv", ContentFile(b"Option,Total cost (USD)\n"))
    return reverse(name, kwargs={"pk": export.pk})


def _backups_url(name, kind, *, workload):
    from tests.backups.factories import make_drill, make_policy, make_version

    policy = make_policy(workload)
    if kind == "backup_policy":
        return reverse(name, kwargs={"slug": workload.slug})
    if kind == "backup_policy_api":
        return reverse(name, kwargs={"workload": workload.slug})
    version = make_version(workload)
    if kind == "backup_version":
        return reverse(name, kwargs={"pk": version.pk})
    drill = make_drill(policy, version)
    return reverse(name, kwargs={"pk": drill.pk})


def _one_day():
    from datetime import timedelta

    return timedelta(days=1)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(ROUTES))
def test_anonymous_is_sent_to_login(client, name, pool, workload, make_user):
    kind, _ = ROUTES[name]
    url = _url(name, kind, pool=pool, workload=workload, user=make_user("reader"))
    response = client.get(url)
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


@pytest.mark.django_db
@pytest.mark.parametrize("role_key", ROLE_KEYS)
@pytest.mark.parametrize("name", sorted(ROUTES))
def test_role_gets_200_or_403_and_htmx_gets_a_fragment(
    client, name, role_key, pool, workload, make_user
):
    kind, rule = ROUTES[name]
    user = make_user(role_key)
    client.force_login(user)
    url = _url(name, kind, pool=pool, workload=workload, user=user)
    allowed = _role_may(role_key, user, rule)
    assert allowed == _expected_from_roles_table(role_key, rule)

    response = client.get(url)
    assert response.status_code == (200 if allowed else 403), response.content[:500]

    fragment = client.get(url, headers={"HX-Request": "true"})
    assert fragment.status_code == (200 if allowed else 403)
    if allowed:
        body = fragment.content.decode()
        assert "<html" not in body and "<body" not in body
        assert body.strip(), "an htmx fragment must not be empty"
        assert "<html" in response.content.decode(), "the plain request must get the full page"


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(API_ROUTES))
def test_api_refuses_anonymous_and_serves_every_role(client, name, pool, workload, make_user):
    url = _url(name, API_ROUTES[name], pool=pool, workload=workload, user=None)
    anonymous = client.get(url)
    assert anonymous.status_code in (401, 403)
    for role_key in ROLE_KEYS:
        client.force_login(make_user(role_key))
        assert client.get(url).status_code == 200, (name, role_key)
