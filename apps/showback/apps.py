from django.apps import AppConfig


class ShowbackConfig(AppConfig):
    name = "apps.showback"
    label = "showback"
    verbose_name = "Showback and budgets"
