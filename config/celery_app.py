"""The Celery application. Workers: ``celery -A config.celery_app worker``; beat:
``celery -A config.celery_app beat``. Configuration comes from Django settings
(``CELERY_*``), tasks are found in each app's ``tasks.py``."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("gpufleet")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
