from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from apps.showback.models import Budget


@admin.register(Budget)
class BudgetAdmin(SimpleHistoryAdmin):
    list_display = ["__str__", "team", "pool", "amount_usd_per_month", "updated_at"]
    list_select_related = ["team", "pool"]
