from django.utils.functional import SimpleLazyObject
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.core.roles import role_names_of

# (label, URL name, URL-name prefixes of the pages that belong to the section)
NAVIGATION = (
    (_("Overview"), "dashboard:overview", ("dashboard:overview",)),
    (_("Pools"), "pools:pool_list", ("pools:pool_",)),
    (_("Workloads"), "pools:workload_list", ("pools:workload_", "pools:calculator")),
    (_("Catalog"), "catalog:gpu_model_list", ("catalog:",)),
    (_("Clusters"), "clusters:cluster_list", ("clusters:", "slurm:")),
    (_("Telemetry"), "telemetry:import_list", ("telemetry:",)),
    (_("Backups"), "backups:policy_list", ("backups:",)),
    (_("Reports"), "reports:report", ("reports:",)),
    (_("Procurement"), "procurement:scenario_list", ("procurement:",)),
    (_("Teams"), "showback:team_list", ("showback:team", "showback:showback", "showback:budget")),
    (_("Alerts"), "alerts:alert_list", ("alerts:",)),
)
# Shown to those who close months (Finance, superusers).
CLOSED_MONTHS = (_("Closed months"), "showback:period_list", ("showback:period_",))
# Kept by the same people (everyone reads the page: the report's warnings link to it).
EXCHANGE_RATES = (_("Exchange rates"), "currencies:exchangerate_list", ("currencies:",))
# Shown to those who read cloud bills (Finance, superusers).
CLOUD_BILLS = (_("Cloud bills"), "bills:bill_list", ("bills:",))


def navigation(request):
    user = getattr(request, "user", None)
    current = getattr(request.resolver_match, "view_name", "") or ""

    def sections():
        # Read when the page's navigation renders, not for every fragment: asking for the
        # permission reads the user's groups.
        shown = NAVIGATION
        if user is not None and user.is_authenticated and user.has_perm("reports.close_month"):
            shown = (*NAVIGATION, CLOSED_MONTHS, EXCHANGE_RATES)
        if user is not None and user.is_authenticated and user.has_perm("bills.view_bill"):
            shown = (*shown, CLOUD_BILLS)
        return [
            (label, url_name, current.startswith(prefixes)) for label, url_name, prefixes in shown
        ]

    return {
        "navigation": SimpleLazyObject(sections),
        # Role names are group names, kept in English in the database; shown translated.
        "user_roles": (
            [gettext(name) for name in role_names_of(user)]
            if user and user.is_authenticated
            else []
        ),
        # django-htmx's {% htmx_script %} looks for this name to add the CSP nonce.
        "csp_nonce": getattr(request, "csp_nonce", None),
    }
