from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"
    verbose_name = _("Accounts and API tokens")

    def ready(self):
        from django.contrib.auth.signals import user_logged_in

        from apps.accounts import schema  # noqa: F401 - registers the OpenAPI extension
        from apps.accounts.middleware import start_idle_clock

        # Like Django's own update_last_login: sign-in stamps the session, so the first
        # request after it does not write the session again.
        user_logged_in.connect(start_idle_clock, dispatch_uid="accounts.start_idle_clock")
