from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from apps.clusters.models import Cluster


@admin.register(Cluster)
class ClusterAdmin(SimpleHistoryAdmin):
    list_display = ["name", "slug", "kind", "region", "timezone", "archived_at"]
    list_filter = ["kind"]
    search_fields = ["name", "slug", "region"]
