from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PilotsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "apps.pilots"
    verbose_name = _("Pilot benchmarks")
