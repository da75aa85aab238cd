from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "apps.reports"
    label = "reports"
    verbose_name = "Utilization and cost reports"

    def ready(self):
        from apps.reports import signals

        signals.connect()
