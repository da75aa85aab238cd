from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from apps.accounts.models import Team
from apps.showback.models import Budget


@admin.register(Budget)
class BudgetAdmin(SimpleHistoryAdmin):
    list_display = ["__str__", "team", "pool", "amount_per_month", "currency", "updated_at"]
    list_select_related = ["team", "pool"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    """The team pages (/teams/) are where teams are kept; the admin offers the same, and a
    team that still owns pools, workloads or budgets is refused by their PROTECT keys.
    Membership changes are audited by the m2m signal whichever way they are made."""

    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["members"]
