import ipaddress

from django.conf import settings
from django.core.checks import Error, register


@register()
def metrics_allowed_addresses(app_configs, **kwargs):
    """A typo in METRICS_ALLOWED_ADDRESSES stops the server at start, not at a scrape."""
    errors = []
    for entry in settings.METRICS_ALLOWED_ADDRESSES:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError as error:
            errors.append(
                Error(
                    f"METRICS_ALLOWED_ADDRESSES: {error}",
                    hint="Give addresses or networks, e.g. 10.0.0.0/8,192.168.1.7",
                    id="alerts.E001",
                )
            )
    return errors
