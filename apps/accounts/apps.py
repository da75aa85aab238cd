from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"
    verbose_name = _("Accounts and API tokens")

    def ready(self):
        from django.contrib.auth import get_user_model
        from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
        from django.db.models.signals import m2m_changed, post_migrate

        from apps.accounts import (
            audit,
            schema,  # noqa: F401 - registers the OpenAPI extension
        )
        from apps.accounts.middleware import start_idle_clock
        from apps.accounts.models import Team
        from apps.accounts.services import load_group_mapping_after_migrate

        # Like Django's own update_last_login: sign-in stamps the session, so the first
        # request after it does not write the session again.
        user_logged_in.connect(start_idle_clock, dispatch_uid="accounts.start_idle_clock")
        # The audit log (apps/accounts/audit.py). Axes connects its own receivers first
        # (it comes first in INSTALLED_APPS), so a failure that locks out is known here.
        user_logged_in.connect(audit.on_signed_in, dispatch_uid="accounts.audit_sign_in")
        user_login_failed.connect(audit.on_sign_in_failed, dispatch_uid="accounts.audit_failed")
        user_logged_out.connect(audit.on_signed_out, dispatch_uid="accounts.audit_sign_out")
        m2m_changed.connect(
            audit.on_groups_changed,
            sender=get_user_model().groups.through,
            dispatch_uid="accounts.audit_groups",
        )
        m2m_changed.connect(
            audit.on_team_members_changed,
            sender=Team.members.through,
            dispatch_uid="accounts.audit_team_members",
        )
        # The data step that bootstraps the group mapping from OIDC_GROUP_MAPPING at every
        # migrate (compose's migrate service), adding only the rows that are missing.
        post_migrate.connect(
            load_group_mapping_after_migrate, sender=self, dispatch_uid="accounts.group_mapping"
        )
