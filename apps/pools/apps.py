from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "apps.pools"
    label = "pools"
    verbose_name = "GPU pools and workloads"
