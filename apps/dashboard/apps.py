from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DashboardConfig(AppConfig):
    name = "apps.dashboard"
    label = "dashboard"
    verbose_name = _("Overview")

    def ready(self):
        from apps.dashboard.views import warm_overview_html
        from apps.reports.warming import register_page_warmer

        # A warm-up renders the Overview's figures too, so the next visit reads one string.
        register_page_warmer("overview", warm_overview_html)
