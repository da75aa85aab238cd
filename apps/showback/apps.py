from django.apps import AppConfig


class ShowbackConfig(AppConfig):
    name = "apps.showback"
    label = "showback"
    verbose_name = "Showback and budgets"

    def ready(self):
        from django.db import transaction
        from django.db.models.signals import post_delete, post_save

        from apps.reports.cache import data_changed
        from apps.showback.models import Budget

        def budget_changed(sender, **kwargs):
            # The cached burn-downs hold the budgets' amounts: a changed budget makes
            # them unreachable, after the commit so a page rendered meanwhile cannot
            # cache the old amount anew.
            transaction.on_commit(data_changed)

        post_save.connect(budget_changed, sender=Budget, dispatch_uid="showback-budget-save")
        post_delete.connect(budget_changed, sender=Budget, dispatch_uid="showback-budget-delete")
