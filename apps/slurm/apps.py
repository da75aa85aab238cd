from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SlurmConfig(AppConfig):
    name = "apps.slurm"
    label = "slurm"
    verbose_name = _("Slurm accounting")
