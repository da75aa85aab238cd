from django.apps import AppConfig
from django.core import checks
from django.utils.translation import gettext_lazy as _


class CurrenciesConfig(AppConfig):
    name = "apps.currencies"
    label = "currencies"
    verbose_name = _("Currencies and exchange rates")

    def ready(self):
        checks.register(reporting_currency_check, checks.Tags.compatibility)


def reporting_currency_check(app_configs=None, **kwargs):
    """``REPORTING_CURRENCY`` must be an ISO 4217 code: every amount is shown in it."""
    from django.conf import settings

    from apps.currencies.codes import is_currency

    if is_currency(settings.REPORTING_CURRENCY):
        return []
    return [
        checks.Error(
            f"REPORTING_CURRENCY={settings.REPORTING_CURRENCY!r} is not an ISO 4217 currency "
            "code (three capital letters such as USD, EUR or CNY).",
            id="currencies.E001",
        )
    ]
