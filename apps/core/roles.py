"""The roles of gpufleet and the permissions each one holds.

Everyone who can log in reads what their scope holds (their teams' objects and the shared
ones; apps/accounts/scope.py); a role adds the right to change one part of the fleet
within that scope. Finance closes months and sees every team. Only superusers
administer users. Each app's data migration calls ``grant_role_permissions`` for the
permissions it introduces, so groups always hold exactly what this table says once
migrations have run.
"""

from dataclasses import dataclass

from django.utils.translation import gettext_noop


@dataclass(frozen=True)
class Role:
    name: str  # kept in English in the database (the group's name); shown translated
    description: str
    permissions: tuple[str, ...]  # "app_label.codename"


TECHNICAL_LEAD = Role(
    name=gettext_noop("Technical lead"),
    description=gettext_noop(
        "Edits pools, workloads, the GPU and model catalogs, alert rules and silences."
    ),
    permissions=(
        "catalog.add_gpumodel",
        "catalog.change_gpumodel",
        "clusters.add_cluster",
        "clusters.change_cluster",
        "clusters.delete_cluster",
        "catalog.delete_gpumodel",
        "catalog.add_modelarchitecture",
        "catalog.change_modelarchitecture",
        "catalog.delete_modelarchitecture",
        "pools.add_pool",
        "pools.change_pool",
        "pools.delete_pool",
        "pools.add_workload",
        "pools.change_workload",
        "pools.delete_workload",
        "pools.add_interruption",
        "pools.change_interruption",
        "pools.delete_interruption",
        "reports.add_recomputejob",
        "telemetry.add_importrun",
        "slurm.add_slurmimport",
        "slurm.add_slurmmappingrule",
        "slurm.change_slurmmappingrule",
        "slurm.delete_slurmmappingrule",
        "telemetry.change_gpudevice",
        "telemetry.add_hostnamerule",
        "telemetry.change_hostnamerule",
        "telemetry.delete_hostnamerule",
        "telemetry.add_pullsource",
        "telemetry.change_pullsource",
        "telemetry.delete_pullsource",
        "pilots.add_pilotresult",
        "pilots.delete_pilotresult",
        "training.add_trainingimportrun",
        "alerts.add_alertrule",
        "alerts.change_alertrule",
        "alerts.delete_alertrule",
        "alerts.add_silence",
        "alerts.change_silence",
        "alerts.delete_silence",
    ),
)
OPS = Role(
    name=gettext_noop("Ops"),
    description=gettext_noop(
        "Edits backup policies, records restore drills, imports telemetry and manages "
        "alert rules, channels and silences."
    ),
    permissions=(
        "telemetry.add_importrun",
        "slurm.add_slurmimport",
        "telemetry.view_purgerun",
        "pilots.add_pilotresult",
        "pilots.delete_pilotresult",
        "training.add_trainingimportrun",
        "pools.add_interruption",
        "pools.change_interruption",
        "pools.delete_interruption",
        "reports.add_recomputejob",
        "backups.add_backuppolicy",
        "backups.change_backuppolicy",
        "backups.delete_backuppolicy",
        "backups.add_backupversion",
        "backups.change_backupversion",
        "backups.delete_backupversion",
        "backups.add_versionchecksum",
        "backups.change_versionchecksum",
        "backups.delete_versionchecksum",
        "backups.add_restoredrill",
        "backups.change_restoredrill",
        "backups.delete_restoredrill",
        "alerts.add_alertrule",
        "alerts.change_alertrule",
        "alerts.delete_alertrule",
        "alerts.add_silence",
        "alerts.change_silence",
        "alerts.delete_silence",
        "alerts.add_alertchannel",
        "alerts.change_alertchannel",
        "alerts.delete_alertchannel",
    ),
)
PROCUREMENT = Role(
    name=gettext_noop("Procurement"),
    description=gettext_noop("Edits comparison scenarios and exports reports."),
    permissions=(
        "procurement.add_scenario",
        "procurement.change_scenario",
        "procurement.delete_scenario",
        "procurement.add_scenariooption",
        "procurement.change_scenariooption",
        "procurement.delete_scenariooption",
        "procurement.add_comparisonexport",
    ),
)
FINANCE = Role(
    name=gettext_noop("Finance"),
    description=gettext_noop(
        "Reads the costs, budgets and showback of every team, closes months, keeps the "
        "exchange rates, imports cloud bills and reconciles them."
    ),
    permissions=(
        "reports.close_month",
        "currencies.add_exchangerate",
        "currencies.change_exchangerate",
        "currencies.delete_exchangerate",
        "bills.view_bill",
        "bills.add_bill",
        "bills.delete_bill",
        "bills.add_mappingrule",
        "bills.change_mappingrule",
        "bills.delete_mappingrule",
        "bills.change_reconciliationsettings",
        "bills.add_pricereplacement",
    ),
)
ROLES = (TECHNICAL_LEAD, OPS, PROCUREMENT, FINANCE)
# Roles whose holders see every team's objects (superusers do too); the others see their
# teams' objects and the shared ones (apps/accounts/scope.py).
FLEET_WIDE_ROLE_NAMES = (FINANCE.name,)


def role_names_of(user) -> list[str]:
    """Names shown next to the user in the header."""
    if user.is_superuser:
        return [gettext_noop("Administrator")]
    role_names = {role.name for role in ROLES}
    return sorted(group.name for group in user.groups.all() if group.name in role_names)


def grant_role_permissions(apps, schema_editor=None):
    """Create the role groups and give them their permissions (used by data migrations).

    Works on the historical models ``apps`` passes in; permissions that do not exist yet
    (their app has not migrated) are skipped and granted by that app's own migration.
    """
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None

    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    for role in ROLES:
        group, _ = group_model.objects.get_or_create(name=role.name)
        for dotted in role.permissions:
            app_label, codename = dotted.split(".", 1)
            permission = permission_model.objects.filter(
                content_type__app_label=app_label, codename=codename
            ).first()
            if permission is not None:
                group.permissions.add(permission)
