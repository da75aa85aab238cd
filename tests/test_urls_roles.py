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
from tests.factories import (
    BackupPolicyFactory,
    HostnameRuleFactory,
    PoolFactory,
    PullSourceFactory,
    ScenarioFactory,
    UserFactory,
    WorkloadFactory,
)

EVERYONE = "everyone"
SUPERUSER = "superuser"

# URL name → (kwargs kind, who may GET it: EVERYONE, SUPERUSER or a permission)
ROUTES = {
    "dashboard:overview": (None, EVERYONE),
    "bills:bill_list": (None, "bills.view_bill"),
    "bills:bill_upload": (None, "bills.add_bill"),
    "bills:bill_detail": ("bill", "bills.view_bill"),
    "bills:bill_delete": ("bill", "bills.delete_bill"),
    "bills:rule_list": (None, "bills.view_bill"),
    "bills:rule_create": (None, "bills.add_mappingrule"),
    "bills:rule_edit": ("bill_rule", "bills.change_mappingrule"),
    "bills:rule_delete": ("bill_rule", "bills.delete_mappingrule"),
    "bills:reconciliation": (None, "bills.view_bill"),
    "bills:tolerance_edit": (None, "bills.change_reconciliationsettings"),
    "bills:replace_price": ("bill_replacement", "bills.add_pricereplacement"),
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
    "reports:pool_lending_panel": ("pool", EVERYONE),
    "reports:lendable_list": (None, EVERYONE),
    "telemetry:pool_panel": ("pool", EVERYONE),
    "training:workload_panel": ("workload", EVERYONE),
    "training:event_import": ("workload", "training.add_trainingimportrun"),
    "backups:workload_at_risk": ("workload", EVERYONE),
    "pools:pool_create": (None, "pools.add_pool"),
    "pools:pool_edit": ("pool", "pools.change_pool"),
    "pools:pool_delete": ("pool", "pools.delete_pool"),
    "pools:workload_list": (None, EVERYONE),
    "pools:workload_detail": ("workload", EVERYONE),
    "pools:workload_create": (None, "pools.add_workload"),
    "pools:workload_edit": ("workload", "pools.change_workload"),
    "pools:workload_delete": ("workload", "pools.delete_workload"),
    "pools:calculator": (None, EVERYONE),
    "pilots:pilot_list": ("workload", EVERYONE),
    "pilots:workload_fit": ("workload", EVERYONE),
    "pilots:pilot_delete": ("pilot_result", "pilots.delete_pilotresult"),
    "currencies:exchangerate_list": (None, EVERYONE),
    "currencies:exchangerate_create": (None, "currencies.add_exchangerate"),
    "currencies:exchangerate_edit": ("exchange_rate", "currencies.change_exchangerate"),
    "currencies:exchangerate_delete": ("exchange_rate", "currencies.delete_exchangerate"),
    "catalog:gpu_model_list": (None, EVERYONE),
    "catalog:gpu_model_detail": ("gpu_model", EVERYONE),
    "catalog:gpu_model_create": (None, "catalog.add_gpumodel"),
    "catalog:gpu_model_edit": ("gpu_model", "catalog.change_gpumodel"),
    "catalog:gpu_model_delete": ("gpu_model", "catalog.delete_gpumodel"),
    "clusters:cluster_list": (None, EVERYONE),
    "clusters:cluster_detail": ("cluster", EVERYONE),
    "clusters:cluster_create": (None, "clusters.add_cluster"),
    "clusters:cluster_edit": ("cluster", "clusters.change_cluster"),
    "clusters:cluster_delete": ("cluster", "clusters.delete_cluster"),
    "slurm:job_list": (None, EVERYONE),
    "slurm:efficiency": (None, EVERYONE),
    "slurm:import": (None, "slurm.add_slurmimport"),
    "slurm:import_detail": ("slurm_import", EVERYONE),
    "slurm:rule_list": (None, EVERYONE),
    "slurm:rule_create": (None, "slurm.add_slurmmappingrule"),
    "slurm:rule_edit": ("slurm_rule", "slurm.change_slurmmappingrule"),
    "slurm:rule_delete": ("slurm_rule", "slurm.delete_slurmmappingrule"),
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
    "telemetry:storage": (None, "telemetry.view_purgerun"),
    "telemetry:pull_source_list": (None, EVERYONE),
    "telemetry:pull_source_create": (None, "telemetry.add_pullsource"),
    "telemetry:pull_source_edit": ("pull_source", "telemetry.change_pullsource"),
    # Also needs pools.add_pool and telemetry.change_gpudevice, which the same roles hold.
    "telemetry:connect": (None, "telemetry.add_pullsource"),
    "telemetry:connect_run": ("connect_run", "telemetry.add_pullsource"),
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
    "accounts:group_mapping_list": (None, SUPERUSER),
    "accounts:group_mapping_create": (None, SUPERUSER),
    "accounts:group_mapping_edit": ("group_mapping", SUPERUSER),
    "accounts:group_mapping_delete": ("group_mapping", SUPERUSER),
    "accounts:audit_list": (None, SUPERUSER),
    "alerts:slurm_report_list": (None, "alerts.change_alertchannel"),
    "alerts:alert_list": (None, EVERYONE),
    "alerts:alert_detail": ("alert", EVERYONE),
    "alerts:rule_list": (None, EVERYONE),
    "alerts:rule_create": (None, "alerts.add_alertrule"),
    "alerts:rule_detail": ("alert_rule", EVERYONE),
    "alerts:rule_edit": ("alert_rule", "alerts.change_alertrule"),
    "alerts:rule_delete": ("alert_rule", "alerts.delete_alertrule"),
    "alerts:channel_list": (None, EVERYONE),
    "alerts:channel_create": (None, "alerts.add_alertchannel"),
    "alerts:channel_detail": ("alert_channel", EVERYONE),
    "alerts:channel_edit": ("alert_channel", "alerts.change_alertchannel"),
    "alerts:channel_delete": ("alert_channel", "alerts.delete_alertchannel"),
    "alerts:delivery_list": (None, EVERYONE),
    "alerts:silence_list": (None, EVERYONE),
    "alerts:silence_create": (None, "alerts.add_silence"),
    "showback:team_list": (None, EVERYONE),
    "showback:team_detail": ("team", EVERYONE),
    "showback:team_create": (None, SUPERUSER),
    "showback:team_edit": ("team", SUPERUSER),
    "showback:team_delete": ("team", SUPERUSER),
    "showback:showback": (None, EVERYONE),
    "showback:budget_list": (None, EVERYONE),
    "showback:period_list": (None, "reports.close_month"),
    "showback:period_close": ("month", "reports.close_month"),
    "showback:period_reopen": ("month", SUPERUSER),
    "showback:budget_create": (None, SUPERUSER),
    "showback:budget_edit": ("budget", SUPERUSER),
    "showback:budget_delete": ("budget", SUPERUSER),
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
    "workload-goodput": "workload",
    "workload-at-risk": "workload",
    "gpu-model-list": None,
    "gpu-model-detail": "gpu_model",
    "cluster-list": None,
    "cluster-detail": "cluster",
    "api-slurm-jobs": None,
    "slurm-rule-list": None,
    "slurm-rule-detail": "slurm_rule",
    "model-architecture-list": None,
    "model-architecture-detail": "architecture",
    "interruption-list": None,
    "interruption-detail": "interruption",
    "api-report-cost": None,
    "api-usage-profile": None,
    "api-reconciliation": None,
    "scenario-list": None,
    "scenario-detail": "scenario",
    "exchange-rate-list": None,
    "exchange-rate-detail": "exchange_rate_api",
    "backup-policy-list": None,
    "backup-policy-detail": "backup_policy_api",
    "backup-version-list": None,
    "backup-version-detail": "backup_version",
    "restore-drill-list": None,
    "restore-drill-detail": "restore_drill",
    "pull-source-list": None,
    "pull-source-detail": "pull_source",
    "pilot-list": None,
    "pilot-detail": "pilot_result_api",
    "alert-rule-list": None,
    "alert-rule-detail": "alert_rule",
    "alert-channel-list": None,
    "alert-channel-detail": "alert_channel",
    "alert-list": None,
    "alert-detail": "alert",
    "silence-list": None,
    "silence-detail": "silence",
    "team-list": None,
    "team-detail": "team",
    "budget-list": None,
    "budget-detail": "budget",
    "api-showback": None,
    "team-audit": "team",
    "pool-lendable": "pool",
    "pool-prices": "pool",
    "lendable-list": None,
}
# REST endpoints for superusers only: anonymous → 401, the other roles → 403.
SUPERUSER_API_ROUTES = {
    # Bills: Finance and superusers (Finance is no role of this walk).
    "api-bills": None,
    "api-bill-detail": "bill",
    "audit-event-list": None,
    "audit-event-detail": "audit_event",
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
    # tests/training/test_api.py
    "api-ingest-training-events",
    "api-usage-hourly",
    "api-usage-requests-hourly",
    # tests/pools/test_archive.py
    "pool-archive",
    "pool-restore",
    "workload-archive",
    "workload-restore",
    # tests/alerts/test_api.py
    "alert-channel-test",
    "silence-expire",
    # tests/showback/test_focus_export.py: start and end are required
    "api-export-focus",
}
# Not walked, with the reason.
EXCLUDED = {
    "login": "the login page itself is public",
    "logout": "POST-only; covered by the browser test",
    "healthz": "public JSON probe for load balancers; covered by test_health",
    "favicon": "a public redirect to the site's icon; covered by tests/core/test_favicon.py",
    "set_language": "public POST that sets the language cookie; covered by tests/core/test_i18n.py",
    "reports:recompute_create": "POST-only; covered by tests/reports/test_views.py",
    "slurm:rule_remap": "POST-only; every role covered by tests/slurm/test_remap.py",
    "currencies:exchangerate_import": "POST-only; covered by tests/currencies/test_views.py",
    "telemetry:device_assign": "POST-only; covered by tests/telemetry/test_views.py",
    "pools:pool_archive": "POST-only; every role covered by tests/pools/test_archive.py",
    "clusters:cluster_archive": "POST-only; covered by tests/clusters/test_clusters.py",
    "clusters:cluster_restore": "POST-only; covered by tests/clusters/test_clusters.py",
    "pools:pool_restore": "POST-only; every role covered by tests/pools/test_archive.py",
    "pools:workload_archive": "POST-only; every role covered by tests/pools/test_archive.py",
    "pools:workload_restore": "POST-only; every role covered by tests/pools/test_archive.py",
    "procurement:export_download": "a streamed file; every role's download and the 404 "
    "without a file are covered by tests/procurement/test_exports.py",
    "backups:version_mark_stable": "POST-only; covered by tests/backups/test_views.py",
    "api-periods": "Finance and superusers only (others 403); every status covered by "
    "tests/showback/test_closed_months.py",
    "api-period-close": "POST-only; covered by tests/showback/test_closed_months.py",
    "api-period-reopen": "POST-only; covered by tests/showback/test_closed_months.py",
    "backups:drill_evidence": "a download, not a page; covered by tests/backups/test_views.py",
    "accounts:oidc_sign_in": "a redirect to the OIDC provider (404 while SSO is off, as in "
    "this walk); covered by tests/accounts/test_sso.py",
    "accounts:oidc_callback": "the OIDC provider's redirect back; covered by "
    "tests/accounts/test_sso.py",
    "alerts:channel_test": "POST-only; every role covered by tests/alerts/test_views.py",
    "alerts:delivery_send_again": "POST-only; every role covered by tests/alerts/test_views.py",
    "alerts:silence_expire": "POST-only; every role covered by tests/alerts/test_views.py",
    "api-reconciliation-bills": "needs ?month=; Finance and superusers only, every status "
    "covered by tests/bills/test_reconciliation.py",
    "metrics": "a bearer token or an address, not a role; covered by tests/alerts/test_metrics.py",
    "showback:focus_export": "a download, not a page; scope, login and a bad range covered "
    "by tests/showback/test_focus_export.py",
    "showback:showback_export": "a download, not a page; every role covered by "
    "tests/showback/test_views.py",
    "showback:team_audit": "a download, not a page; scope, login and a bad month covered by "
    "tests/showback/test_audit_bundle.py",
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
    declared = set(ROUTES) | set(API_ROUTES) | set(SUPERUSER_API_ROUTES)
    uncovered = names - declared - set(EXCLUDED) - POST_ONLY_API
    assert not uncovered, f"URL names without a role expectation: {sorted(uncovered)}"
    stale = declared - names
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
    if kind == "bill":
        from apps.bills.models import Bill

        bill = Bill.objects.create(filename="walk.csv", content_sha256="0" * 64, source="upload")
        return reverse(name, kwargs={"pk": bill.pk})
    if kind == "bill_rule":
        from apps.bills.models import MappingRule

        rule = MappingRule.objects.create(kind="sku", value="walk", pool=pool)
        return reverse(name, kwargs={"pk": rule.pk})
    if kind == "bill_replacement":
        from apps.bills.models import MappingRule

        MappingRule.objects.create(kind="sku", value="walk", pool=pool)
        return reverse(name, kwargs={"slug": pool.slug, "month": "2024-09"})
    if kind == "hostname_rule":
        rule = HostnameRule.objects.create(pool=pool, hostname_pattern="walk-*")
        return reverse(name, kwargs={"pk": rule.pk})
    if kind == "connect_run":
        run = ImportRun.objects.create(
            kind="gpu",
            format="prometheus",
            source="prometheus",
            filename="http://prometheus:9090",
            status="pending",
            task_arguments={"since": "2026-01-01T00:00:00+00:00", "connect_pool_ids": [pool.pk]},
        )
        return reverse(name, kwargs={"pk": run.pk})
    if kind == "pull_source":
        source = PullSourceFactory(name="walk", pool=pool)
        return reverse(name, kwargs={"slug": source.slug})
    if kind == "gpu_model":
        return reverse(name, kwargs={"slug": pool.gpu_model.slug})
    if kind == "cluster":
        return reverse(name, kwargs={"slug": pool.cluster.slug})
    if kind == "slurm_import":
        from apps.slurm.models import SlurmImport

        run = SlurmImport.objects.create(
            cluster=pool.cluster, imported_at=timezone.now(), source="command"
        )
        return reverse(name, kwargs={"pk": run.pk})
    if kind == "slurm_rule":
        from apps.slurm.models import SlurmMappingRule

        rule = SlurmMappingRule.objects.create(field="user", pattern="walk", workload=workload)
        return reverse(name, kwargs={"pk": rule.pk})
    if kind in ("exchange_rate", "exchange_rate_api"):
        from apps.currencies.models import ExchangeRate

        rate, _created = ExchangeRate.objects.get_or_create(
            month=date(2026, 1, 1), currency="CNY", defaults={"units_per_usd": "7.1"}
        )
        return reverse(name, kwargs={"pk": rate.pk})
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
    if kind == "group_mapping":
        from apps.accounts.models import GroupMapping

        mapping = GroupMapping.objects.create(idp_group="walk-group", role="lead")
        return reverse(name, kwargs={"pk": mapping.pk})
    if kind == "audit_event":
        from apps.accounts.models import AuditEvent

        event = AuditEvent.objects.create(kind="sign_in", method="local", username="walk")
        return reverse(name, kwargs={"pk": event.pk})
    if kind in ("alert_rule", "alert_channel", "alert", "silence"):
        return _alerts_url(name, kind, pool=pool)
    if kind in ("pilot_result", "pilot_result_api"):
        result = _pilot_result(workload)
        if kind == "pilot_result_api":
            return reverse(name, kwargs={"pk": result.pk})
        return reverse(name, kwargs={"slug": workload.slug, "pk": result.pk})
    if kind == "team":
        return reverse(name, kwargs={"slug": _walk_team(pool, user).slug})
    if kind == "month":
        return reverse(name, kwargs={"month": "2026-01"})
    if kind == "budget":
        from apps.showback.models import Budget

        budget, _ = Budget.objects.get_or_create(
            pool=pool, defaults={"amount_per_month": "1000.00"}
        )
        return reverse(name, kwargs={"pk": budget.pk})
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
        defaults={
            "name": "Walk scenario",
            "demand_source": "measured_pool",
            "demand_pool": pool,
            "team": pool.team,
        },
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


def _alerts_url(name, kind, *, pool):
    from tests.alerts.factories import make_alert, make_channel, make_rule, make_silence

    channel = make_channel(name="Walk channel", team=pool.team)
    if kind == "alert_channel":
        return reverse(name, kwargs={"slug": channel.slug})
    rule = make_rule(name="Walk rule", channel=channel, team=pool.team, pool=pool)
    if kind == "alert_rule":
        return reverse(name, kwargs={"slug": rule.slug})
    if kind == "silence":
        return reverse(name, kwargs={"pk": make_silence(rule=rule).pk})
    return reverse(name, kwargs={"pk": make_alert(rule, pool).pk})


def _pilot_result(workload):
    from apps.pilots.models import PilotResult

    result, _ = PilotResult.objects.get_or_create(
        workload=workload,
        content_sha256="0" * 64,
        defaults={
            "gpu_model": workload.pool.gpu_model,
            "name": "Walk pilot",
            "gpu_count": 8,
            "source_format": "vllm",
            "output_tokens_per_second": 1000.0,
        },
    )
    return result


def _walk_team(pool, user):
    """The walk pool's team when it has one (tests/test_team_scope.py), else a team of
    the walk's own that ``user`` belongs to: a team's page is its members'."""
    from apps.accounts.models import Team

    if pool.team_id:
        return pool.team
    team, _ = Team.objects.get_or_create(slug="walk-team", defaults={"name": "Walk team"})
    if user is not None:
        team.members.add(user)
    return team


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
        user = make_user(role_key)
        if API_ROUTES[name] == "team":
            _walk_team(pool, user)  # a team is read by its members
        client.force_login(user)
        assert client.get(url).status_code == 200, (name, role_key)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(SUPERUSER_API_ROUTES))
def test_superuser_api_refuses_anonymous_and_the_other_roles(
    client, name, pool, workload, make_user
):
    url = _url(name, SUPERUSER_API_ROUTES[name], pool=pool, workload=workload, user=None)
    assert client.get(url).status_code in (401, 403)
    for role_key in ROLE_KEYS:
        client.force_login(make_user(role_key))
        expected = 200 if role_key == "admin" else 403
        assert client.get(url).status_code == expected, (name, role_key)


# --- POST legs ----------------------------------------------------------------------
# Each main create/edit/delete view, POSTed by every role: with the permission the saved
# state shows the object created, changed or deleted; without it the answer is 403 and
# nothing changed. The form data is the one the view itself renders (as a superuser sees
# it), so a field added to a form is posted without this file knowing about it.


def _form_data(form) -> dict:
    """What a browser would submit for ``form`` as rendered: each field's shown value."""
    from django import forms

    data = {}
    for bound_field in form:
        value = bound_field.value()
        widget = bound_field.field.widget
        if isinstance(widget, forms.CheckboxInput):
            if value:
                data[bound_field.html_name] = "on"
        elif getattr(widget, "allow_multiple_selected", False):
            data[bound_field.html_name] = [str(item) for item in value or ()]
        else:
            data[bound_field.html_name] = "" if value is None else str(value)
    return data


def _rendered_form_data(url, changes):
    from django.test import Client

    admin = Client()
    admin.force_login(UserFactory(role="admin"))
    response = admin.get(url)
    assert response.status_code == 200, url
    return {**_form_data(response.context["form"]), **changes}


def _pool_state(slug):
    from apps.pools.models import Pool

    return Pool.objects.filter(slug=slug).values("name", "description").first()


def _workload_state(slug):
    from apps.pools.models import Workload

    return Workload.objects.filter(slug=slug).values("name", "description").first()


def _policy_state(slug):
    from apps.backups.models import BackupPolicy

    return BackupPolicy.objects.filter(workload__slug=slug).values("rpo_minutes").first()


def _scenario_state(slug):
    from apps.procurement.models import Scenario

    return Scenario.objects.filter(slug=slug).values("name", "horizon_months").first()


def _rule_state(pattern):
    return HostnameRule.objects.filter(hostname_pattern=pattern).values("pool__slug").first()


def _setup_pool_create(pool):
    url = reverse("pools:pool_create")
    edit_url = reverse("pools:pool_edit", kwargs={"slug": pool.slug})
    data = _rendered_form_data(edit_url, {"name": "Posted pool", "slug": "posted-pool"})
    return url, data, lambda: _pool_state("posted-pool"), lambda state: state is not None


def _setup_pool_edit(pool):
    url = reverse("pools:pool_edit", kwargs={"slug": pool.slug})
    data = _rendered_form_data(url, {"description": "Posted description"})

    def changed(state):
        return state["description"] == "Posted description"

    return url, data, lambda: _pool_state(pool.slug), changed


def _bill_rule_state(value):
    from apps.bills.models import MappingRule

    return MappingRule.objects.filter(value=value).values("priority", "pool__slug").first()


def _setup_bill_rule_create(pool):
    url = reverse("bills:rule_create")
    data = {"priority": "7", "kind": "sku", "value": "posted-sku", "pool": str(pool.pk)}
    return url, data, lambda: _bill_rule_state("posted-sku"), lambda state: state is not None


def _setup_bill_rule_edit(pool):
    from apps.bills.models import MappingRule

    rule = MappingRule.objects.create(kind="sku", value="edited-sku", pool=pool, priority=1)
    url = reverse("bills:rule_edit", kwargs={"pk": rule.pk})
    data = _rendered_form_data(url, {"priority": "9"})
    return url, data, lambda: _bill_rule_state("edited-sku"), lambda state: state["priority"] == 9


def _setup_bill_rule_delete(pool):
    from apps.bills.models import MappingRule

    rule = MappingRule.objects.create(kind="sku", value="deleted-sku", pool=pool)
    url = reverse("bills:rule_delete", kwargs={"pk": rule.pk})
    return url, {}, lambda: _bill_rule_state("deleted-sku"), lambda state: state is None


def _setup_pool_delete(pool):
    # A pool with no workloads and no usage: deleting it is allowed.
    spare = PoolFactory(gpu_model=pool.gpu_model)
    url = reverse("pools:pool_delete", kwargs={"slug": spare.slug})
    return url, {}, lambda: _pool_state(spare.slug), lambda state: state is None


def _setup_workload_create(pool):
    workload = WorkloadFactory(pool=pool)
    edit_url = reverse("pools:workload_edit", kwargs={"slug": workload.slug})
    data = _rendered_form_data(edit_url, {"name": "Posted workload", "slug": "posted-workload"})
    url = reverse("pools:workload_create")
    return url, data, lambda: _workload_state("posted-workload"), lambda state: state is not None


def _setup_workload_edit(pool):
    workload = WorkloadFactory(pool=pool)
    url = reverse("pools:workload_edit", kwargs={"slug": workload.slug})
    data = _rendered_form_data(url, {"description": "Posted description"})

    def changed(state):
        return state["description"] == "Posted description"

    return url, data, lambda: _workload_state(workload.slug), changed


def _setup_workload_delete(pool):
    workload = WorkloadFactory(pool=pool)  # no usage, no backups: deleting it is allowed
    url = reverse("pools:workload_delete", kwargs={"slug": workload.slug})
    return url, {}, lambda: _workload_state(workload.slug), lambda state: state is None


def _setup_policy_create(pool):
    workload = WorkloadFactory(pool=pool)
    url = reverse("backups:policy_create", kwargs={"slug": workload.slug})
    data = _rendered_form_data(url, {"rpo_minutes": "90", "rto_minutes": "60"})
    return url, data, lambda: _policy_state(workload.slug), lambda state: state is not None


def _setup_policy_edit(pool):
    policy = BackupPolicyFactory(workload=WorkloadFactory(pool=pool))
    slug = policy.workload.slug
    url = reverse("backups:policy_edit", kwargs={"slug": slug})
    data = _rendered_form_data(url, {"rpo_minutes": "45"})
    return url, data, lambda: _policy_state(slug), lambda state: state["rpo_minutes"] == 45


def _setup_policy_delete(pool):
    policy = BackupPolicyFactory(workload=WorkloadFactory(pool=pool))
    slug = policy.workload.slug
    url = reverse("backups:policy_delete", kwargs={"slug": slug})
    return url, {}, lambda: _policy_state(slug), lambda state: state is None


def _setup_scenario_create(pool):
    scenario = ScenarioFactory(demand_pool=pool)
    edit_url = reverse("procurement:scenario_edit", kwargs={"slug": scenario.slug})
    data = _rendered_form_data(edit_url, {"name": "Posted scenario", "slug": "posted-scenario"})
    url = reverse("procurement:scenario_create")
    return url, data, lambda: _scenario_state("posted-scenario"), lambda state: state is not None


def _setup_scenario_edit(pool):
    scenario = ScenarioFactory(demand_pool=pool)
    url = reverse("procurement:scenario_edit", kwargs={"slug": scenario.slug})
    data = _rendered_form_data(url, {"horizon_months": "24"})

    def changed(state):
        return state["horizon_months"] == 24

    return url, data, lambda: _scenario_state(scenario.slug), changed


def _setup_scenario_delete(pool):
    scenario = ScenarioFactory(demand_pool=pool)
    url = reverse("procurement:scenario_delete", kwargs={"slug": scenario.slug})
    return url, {}, lambda: _scenario_state(scenario.slug), lambda state: state is None


def _setup_rule_create(pool):
    url = reverse("telemetry:rule_create")
    data = _rendered_form_data(url, {"pool": str(pool.pk), "hostname_pattern": "posted-*"})
    return url, data, lambda: _rule_state("posted-*"), lambda state: state is not None


def _setup_rule_delete(pool):
    rule = HostnameRuleFactory(pool=pool, hostname_pattern="doomed-*")
    url = reverse("telemetry:rule_delete", kwargs={"pk": rule.pk})
    return url, {}, lambda: _rule_state("doomed-*"), lambda state: state is None


def _pull_source_state(slug):
    from apps.telemetry.models import PullSource

    return PullSource.objects.filter(slug=slug).values("kind", "label_filters").first()


def _setup_pull_source_create(pool):
    url = reverse("telemetry:pull_source_create")
    data = _rendered_form_data(
        url,
        {
            "name": "Posted TSDB",
            "slug": "",
            "kind": "prometheus_hourly",
            "url": "http://vm.example:8428",
            "pool": str(pool.pk),
            "label_filters": 'cluster="a"',
        },
    )
    return url, data, lambda: _pull_source_state("posted-tsdb"), lambda state: state is not None


def _setup_pull_source_edit(pool):
    source = PullSourceFactory(
        name="edited", kind="prometheus_hourly", url="http://vm.example:8428", pool=pool
    )
    url = reverse("telemetry:pull_source_edit", kwargs={"slug": source.slug})
    data = _rendered_form_data(url, {"label_filters": 'namespace=~"ml-.*"'})

    def changed(state):
        return state["label_filters"] == 'namespace=~"ml-.*"'

    return url, data, lambda: _pull_source_state(source.slug), changed


def _alert_rule_state(slug):
    from apps.alerts.models import AlertRule

    return AlertRule.objects.filter(slug=slug).values("name", "window_hours").first()


def _alert_channel_state(slug):
    from apps.alerts.models import AlertChannel

    return AlertChannel.objects.filter(slug=slug).values("name", "url").first()


def _setup_alert_rule_create(pool):
    from tests.alerts.factories import make_rule

    rule = make_rule(pool=pool)
    edit_url = reverse("alerts:rule_edit", kwargs={"slug": rule.slug})
    data = _rendered_form_data(edit_url, {"name": "Posted rule", "slug": "posted-rule"})
    url = reverse("alerts:rule_create")
    return url, data, lambda: _alert_rule_state("posted-rule"), lambda state: state is not None


def _setup_alert_rule_edit(pool):
    from tests.alerts.factories import make_rule

    rule = make_rule(pool=pool, kind="flagged_hours", window_hours=24)
    url = reverse("alerts:rule_edit", kwargs={"slug": rule.slug})
    data = _rendered_form_data(url, {"window_hours": "48"})
    return url, data, lambda: _alert_rule_state(rule.slug), lambda s: s["window_hours"] == 48


def _setup_alert_rule_delete(pool):
    from tests.alerts.factories import make_rule

    rule = make_rule(pool=pool)
    url = reverse("alerts:rule_delete", kwargs={"slug": rule.slug})
    return url, {}, lambda: _alert_rule_state(rule.slug), lambda state: state is None


def _setup_alert_channel_create(pool):
    from tests.alerts.factories import make_channel

    channel = make_channel()
    edit_url = reverse("alerts:channel_edit", kwargs={"slug": channel.slug})
    data = _rendered_form_data(edit_url, {"name": "Posted channel", "slug": "posted-channel"})
    url = reverse("alerts:channel_create")
    return url, data, lambda: _alert_channel_state("posted-channel"), lambda s: s is not None


def _setup_alert_channel_edit(pool):
    from tests.alerts.factories import make_channel

    channel = make_channel()
    url = reverse("alerts:channel_edit", kwargs={"slug": channel.slug})
    data = _rendered_form_data(url, {"url": "https://hooks.example.com/posted"})

    def changed(state):
        return state["url"] == "https://hooks.example.com/posted"

    return url, data, lambda: _alert_channel_state(channel.slug), changed


def _setup_alert_channel_delete(pool):
    from tests.alerts.factories import make_channel

    channel = make_channel()  # no rule uses it: deleting it is allowed
    url = reverse("alerts:channel_delete", kwargs={"slug": channel.slug})
    return url, {}, lambda: _alert_channel_state(channel.slug), lambda state: state is None


def _setup_silence_create(pool):
    from apps.alerts.models import Silence

    url = reverse("alerts:silence_create")
    data = _rendered_form_data(
        url, {"matchers_text": "pool=posted-pool", "comment": "Posted silence"}
    )

    def state():
        return Silence.objects.filter(comment="Posted silence").values("matchers").first()

    return url, data, state, lambda state: state is not None


# URL name → builds (url, POST data, read the saved state, "did the POST take effect?")
POST_CASES = {
    "bills:rule_create": _setup_bill_rule_create,
    "bills:rule_edit": _setup_bill_rule_edit,
    "bills:rule_delete": _setup_bill_rule_delete,
    "pools:pool_create": _setup_pool_create,
    "pools:pool_edit": _setup_pool_edit,
    "pools:pool_delete": _setup_pool_delete,
    "pools:workload_create": _setup_workload_create,
    "pools:workload_edit": _setup_workload_edit,
    "pools:workload_delete": _setup_workload_delete,
    "backups:policy_create": _setup_policy_create,
    "backups:policy_edit": _setup_policy_edit,
    "backups:policy_delete": _setup_policy_delete,
    "procurement:scenario_create": _setup_scenario_create,
    "procurement:scenario_edit": _setup_scenario_edit,
    "procurement:scenario_delete": _setup_scenario_delete,
    "telemetry:rule_create": _setup_rule_create,
    "telemetry:rule_delete": _setup_rule_delete,
    "telemetry:pull_source_create": _setup_pull_source_create,
    "telemetry:pull_source_edit": _setup_pull_source_edit,
    "alerts:rule_create": _setup_alert_rule_create,
    "alerts:rule_edit": _setup_alert_rule_edit,
    "alerts:rule_delete": _setup_alert_rule_delete,
    "alerts:channel_create": _setup_alert_channel_create,
    "alerts:channel_edit": _setup_alert_channel_edit,
    "alerts:channel_delete": _setup_alert_channel_delete,
    "alerts:silence_create": _setup_silence_create,
}


def test_post_cases_follow_the_routes_table():
    assert set(POST_CASES) <= set(ROUTES)
    assert all(ROUTES[name][1] not in (EVERYONE, SUPERUSER) for name in POST_CASES)


@pytest.mark.django_db
@pytest.mark.parametrize("role_key", ROLE_KEYS)
@pytest.mark.parametrize("name", sorted(POST_CASES))
def test_role_posts_and_the_saved_state_shows_it_or_403(client, name, role_key, pool):
    _, rule = ROUTES[name]
    url, data, saved_state, took_effect = POST_CASES[name](pool)
    user = UserFactory(role=role_key)
    client.force_login(user)
    allowed = _expected_from_roles_table(role_key, rule)
    assert allowed == user.has_perm(rule)
    before = saved_state()
    assert not took_effect(before), "the case must start from a state the POST changes"

    response = client.post(url, data)

    after = saved_state()
    if allowed:
        errors = (
            response.context and response.context.get("form") and response.context["form"].errors
        )
        assert response.status_code == 302, errors
        assert took_effect(after), (name, role_key, after)
    else:
        assert response.status_code == 403
        assert after == before
