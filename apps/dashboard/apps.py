from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DashboardConfig(AppConfig):
    name = "apps.dashboard"
    label = "dashboard"
    verbose_name = _("Overview")

    def ready(self):
        from apps.dashboard.selectors import overview_figures
        from apps.dashboard.views import warm_overview_html
        from apps.reports.warming import register_page_warmer

        # A warm-up computes the Overview's figures, which its explanations read, then
        # renders them, so the next visit reads one string.
        register_page_warmer("overview", overview_figures)
        register_page_warmer("overview", warm_overview_html)
