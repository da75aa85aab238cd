from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ClustersConfig(AppConfig):
    name = "apps.clusters"
    label = "clusters"
    verbose_name = _("Clusters")
