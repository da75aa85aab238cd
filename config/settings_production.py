"""Production settings: everything from config.settings, hardened.

Refuses to start without SECRET_KEY, turns DEBUG off and sets the HTTPS-only headers
that ``manage.py check --deploy --fail-level WARNING`` asks for. Behind a TLS-terminating
proxy, that proxy must set ``X-Forwarded-Proto``.
"""

from django.core.exceptions import ImproperlyConfigured

from config.settings import *  # noqa: F403
from config.settings import env

if not env.str("SECRET_KEY", default=""):
    raise ImproperlyConfigured(
        "SECRET_KEY is not set. Production settings refuse to start without one; "
        "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )
SECRET_KEY = env.str("SECRET_KEY")
DEBUG = False
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS")

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
# /healthz is probed over plain HTTP by compose and load balancers.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
CSRF_COOKIE_HTTPONLY = True
