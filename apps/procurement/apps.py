from django.apps import AppConfig


class ProcurementConfig(AppConfig):
    name = "apps.procurement"
    label = "procurement"
    verbose_name = "Procurement scenarios"

    def ready(self):
        from django.utils.translation import gettext

        from apps.procurement import comparison

        # The recommendation is written in the reader's language (comparison.py has no
        # Django).
        comparison.translate = gettext
