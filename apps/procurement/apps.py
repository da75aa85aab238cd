from django.apps import AppConfig


class ProcurementConfig(AppConfig):
    name = "apps.procurement"
    label = "procurement"
    verbose_name = "Procurement scenarios"
