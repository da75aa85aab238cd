from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo fleet (``manage.py seed_demo``): above every app, whose own demo data it
    seeds in one transaction."""

    name = "apps.demo"
    label = "demo"
    verbose_name = "Demo data"
