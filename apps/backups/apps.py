from django.apps import AppConfig


class BackupsConfig(AppConfig):
    name = "apps.backups"
    label = "backups"
    verbose_name = "Backups"
