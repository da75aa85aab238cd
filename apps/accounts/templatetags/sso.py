from django import template
from django.conf import settings

register = template.Library()


@register.simple_tag
def sso_provider_name():
    """The provider's name for the sign-in button, or "" while single sign-on is off."""
    return settings.OIDC_PROVIDER_NAME if settings.OIDC_ISSUER else ""
