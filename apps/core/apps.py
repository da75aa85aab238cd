from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"
    verbose_name = _("Core")

    def ready(self):
        from django.utils.translation import gettext

        from apps.core import sentences

        # Text the framework-free modules build while a page is drawn is written in the
        # reader's language (apps/core/sentences.py has no Django).
        sentences.install_translator(gettext)
