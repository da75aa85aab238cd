from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "apps.reports"
    label = "reports"
    verbose_name = "Utilization and cost reports"

    def ready(self):
        from apps.pools import list_columns
        from apps.reports import signals
        from apps.reports.pool_list import POOL_LIST_COLUMNS

        signals.connect()
        # The pool list's usage and cost columns (apps/reports/pool_list.py).
        list_columns.register(POOL_LIST_COLUMNS)
