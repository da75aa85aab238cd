from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "apps.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self):
        from apps.alerts import (  # noqa: F401 - the checks and the kinds
            budget_evaluator,
            checks,
            evaluators,
        )
