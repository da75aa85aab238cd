from apps.core.roles import role_names_of

NAVIGATION = (
    ("Overview", "core:overview"),
    ("Pools", "pools:pool_list"),
    ("Workloads", "pools:workload_list"),
    ("Backups", "core:backups"),
    ("Reports", "core:reports"),
    ("Procurement", "core:procurement"),
)


def navigation(request):
    user = getattr(request, "user", None)
    return {
        "navigation": NAVIGATION,
        "current_url_name": getattr(request.resolver_match, "view_name", ""),
        "user_roles": role_names_of(user) if user and user.is_authenticated else [],
        # django-htmx's {% htmx_script %} looks for this name to add the CSP nonce.
        "csp_nonce": getattr(request, "csp_nonce", None),
    }
