from apps.core.roles import role_names_of

# (label, URL name, URL-name prefixes of the pages that belong to the section)
NAVIGATION = (
    ("Overview", "dashboard:overview", ("dashboard:overview",)),
    ("Pools", "pools:pool_list", ("pools:pool_",)),
    ("Workloads", "pools:workload_list", ("pools:workload_", "pools:calculator")),
    ("Catalog", "catalog:gpu_model_list", ("catalog:",)),
    ("Telemetry", "telemetry:import_list", ("telemetry:",)),
    ("Backups", "backups:policy_list", ("backups:",)),
    ("Reports", "reports:report", ("reports:",)),
    ("Procurement", "procurement:scenario_list", ("procurement:",)),
)


def navigation(request):
    user = getattr(request, "user", None)
    current = getattr(request.resolver_match, "view_name", "") or ""
    return {
        "navigation": [
            (label, url_name, current.startswith(prefixes))
            for label, url_name, prefixes in NAVIGATION
        ],
        "user_roles": role_names_of(user) if user and user.is_authenticated else [],
        # django-htmx's {% htmx_script %} looks for this name to add the CSP nonce.
        "csp_nonce": getattr(request, "csp_nonce", None),
    }
