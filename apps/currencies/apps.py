from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CurrenciesConfig(AppConfig):
    name = "apps.currencies"
    label = "currencies"
    verbose_name = _("Currencies and exchange rates")
