from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    name = "apps.telemetry"
    label = "telemetry"
    verbose_name = "Telemetry"

    def ready(self):
        from apps.pools.signals import service_period_changed
        from apps.telemetry.signals import recompute_pool_history

        service_period_changed.connect(
            recompute_pool_history, dispatch_uid="telemetry-service-period-changed"
        )
