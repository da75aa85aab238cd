from django.apps import AppConfig


class BillsConfig(AppConfig):
    name = "apps.bills"
    label = "bills"
    verbose_name = "Cloud bills and reconciliation"
