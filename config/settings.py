"""Settings for gpufleet, read from the environment (django-environ).

gpufleet runs on PostgreSQL and Redis, the way production runs it. With nothing set, it
starts an embedded PostgreSQL with its data under ``var/postgres`` (config/embedded.py),
and ``manage.py run`` adds an embedded Redis, a Celery worker and beat beside the web
server. Point ``DATABASE_URL`` at a PostgreSQL server and ``REDIS_URL`` at a Redis to use
them instead. Production deployments use ``config.settings_production``, which refuses
to start without ``SECRET_KEY``.
"""

from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import environ
from celery.schedules import crontab
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# A developer's .env file is honoured, never required.
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
# Where gpufleet keeps what it writes: the embedded database, uploads, backups, static files.
VAR_DIR = Path(env.str("VAR_DIR", default=str(BASE_DIR / "var"))).resolve()

DEBUG = env.bool("DEBUG", default=True)
# Only the development default lives here; config.settings_production demands a real one.
SECRET_KEY = env.str("SECRET_KEY", default="django-insecure-gpufleet-development-only")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_TZ = True
# English unless the browser asks for Chinese (LocaleMiddleware reads Accept-Language);
# the user menu switches, and the choice is kept in a cookie.
LANGUAGE_CODE = "en"
USE_I18N = True
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["config.formats"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "csp",
    "axes",
    "django_filters",
    "django_tables2",
    "simple_history",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_prometheus",
    "apps.core",
    "apps.accounts",
    "apps.catalog",
    "apps.currencies",
    "apps.clusters",
    "apps.pools",
    "apps.telemetry",
    "apps.slurm",
    "apps.pilots",
    "apps.training",
    "apps.reports",
    "apps.backups",
    "apps.procurement",
    "apps.showback",
    "apps.bills",
    "apps.alerts",
    "apps.dashboard",
    "apps.demo",
]

MIDDLEWARE = [
    # Requests, responses and latency for /metrics (django-prometheus): first and last.
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django_permissions_policy.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    # ?pool=%00 would reach PostgreSQL, which refuses NUL in text with a 500.
    "apps.core.middleware.RefuseNulCharactersMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Who is acting, for the audit log of sign-ins and role and team changes.
    "apps.accounts.audit.AuditContextMiddleware",
    "apps.accounts.middleware.SessionIdleTimeoutMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Records who made each change kept in the objects' history.
    "simple_history.middleware.HistoryRequestMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last but Axes, whose lockout responses it then counts too (django-prometheus's,
    # reading a malformed Content-Length as Django does).
    "apps.core.request_metrics.RequestMetricsMiddleware",
    # Axes must come last: it turns lockouts raised by the auth backend into responses.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "csp.context_processors.nonce",
                "apps.core.context_processors.navigation",
            ],
            "builtins": ["template_partials.templatetags.partials"],
        },
    }
]

VAR_DIR.mkdir(parents=True, exist_ok=True)
DATABASE_URL = env.str("DATABASE_URL", default="")
if not DATABASE_URL:
    from config.embedded import embedded_database_url

    DATABASE_URL = embedded_database_url(VAR_DIR / "postgres")
DATABASES = {"default": env.db_url_config(DATABASE_URL)}
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured(
        f"DATABASE_URL must name a PostgreSQL database (postgres://…), not "
        f"{DATABASES['default']['ENGINE']}: gpufleet runs on PostgreSQL only."
    )
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
# django-prometheus counts queries, errors and connections for /metrics by subclassing the
# backend; its vendor stays "postgresql".
DATABASES["default"]["ENGINE"] = "django_prometheus.db.backends.postgresql"
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.str("REDIS_URL", default="")
if not REDIS_URL:
    # A command typed while `manage.py run` runs sends its work to that run's worker.
    from config.embedded import running_redis_url

    REDIS_URL = running_redis_url(VAR_DIR / "redis")
if REDIS_URL:
    CACHES = {
        "default": {
            # Redis unreachable: reads miss and writes are dropped, so pages compute their
            # figures in the request (apps/core/cache.py). Timeouts keep a Redis host that
            # drops packets from holding a request: pages make a dozen cache calls.
            "BACKEND": "apps.core.cache.FailSoftRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="gpufleet"),
            "OPTIONS": {
                "socket_connect_timeout": env.float("CACHE_CONNECT_TIMEOUT_SECONDS", default=0.25),
                "socket_timeout": env.float("CACHE_TIMEOUT_SECONDS", default=0.5),
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    # Single sign-on with OpenID Connect; authenticates nobody while OIDC_ISSUER is empty.
    "apps.accounts.oidc.OidcBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:overview"
LOGOUT_REDIRECT_URL = "login"
# A session ends 14 days after sign-in however busy (Django's default, stated), and
# sooner after SESSION_IDLE_TIMEOUT without a request (apps/accounts/middleware.py).
SESSION_COOKIE_AGE = int(timedelta(days=14).total_seconds())
SESSION_IDLE_TIMEOUT = timedelta(hours=env.float("SESSION_IDLE_TIMEOUT_HOURS", default=8))

# Repeated login failures lock the username from that address out (django-axes).
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=30))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# ...and an address trying many usernames is locked out, whatever the usernames, after this
# many failures in all (apps/accounts/lockout.py): higher, for colleagues behind one NAT.
AXES_ADDRESS_FAILURE_LIMIT = env.int("AXES_ADDRESS_FAILURE_LIMIT", default=20)
AXES_HANDLER = "apps.accounts.lockout.AddressAndUsernameLockoutHandler"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"

STATIC_URL = "static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=str(VAR_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # Serves plotly.min.js straight from the installed plotly wheel: no CDN, no copy in git.
    "apps.core.staticfiles.PlotlyWheelFinder",
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
MEDIA_ROOT = env.path("MEDIA_ROOT", default=str(VAR_DIR / "media"))
MEDIA_URL = "media/"
# Where manage.py backup_database writes gpufleet's own backups (apps/backups/self_backup.py).
BACKUP_DIR = env.path("BACKUP_DIR", default=str(VAR_DIR / "backups"))

# Security headers that hold in every environment; HTTPS-only ones are in production.
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
# The dashboard uses none of these browser features: no page, and nothing injected into
# one, may ask for them (django-permissions-policy).
PERMISSIONS_POLICY = {
    feature: []
    for feature in (
        "accelerometer",
        "autoplay",
        "camera",
        "display-capture",
        "geolocation",
        "gyroscope",
        "magnetometer",
        "microphone",
        "midi",
        "payment",
        "publickey-credentials-get",
        "screen-wake-lock",
        "serial",
        "usb",
        "xr-spatial-tracking",
    )
}
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        # plotly.js and htmx's indicator styles insert <style> elements at run time.
        "style-src": [SELF, "'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
        "base-uri": [SELF],
        "object-src": [NONE],
    },
}

# Single sign-on with an OpenID Connect provider (apps/accounts/oidc.py, mozilla-django-oidc):
# off while OIDC_ISSUER is empty. The endpoints come from the issuer's discovery document
# unless set here; the group mapping's first rows from OIDC_GROUP_MAPPING
# (manage.py sync_group_mapping).
OIDC_ISSUER = env.str("OIDC_ISSUER", default="").rstrip("/")
OIDC_RP_CLIENT_ID = env.str("OIDC_CLIENT_ID", default="")
OIDC_RP_CLIENT_SECRET = env.str("OIDC_CLIENT_SECRET", default="")
OIDC_RP_SCOPES = env.str("OIDC_SCOPES", default="openid email profile groups")
OIDC_RP_SIGN_ALGO = env.str("OIDC_SIGN_ALGO", default="RS256")
OIDC_GROUPS_CLAIM = env.str("OIDC_GROUPS_CLAIM", default="groups")
OIDC_PROVIDER_NAME = env.str("OIDC_PROVIDER_NAME", default="SSO")
OIDC_END_SESSION = env.bool("OIDC_END_SESSION", default=True)
OIDC_GROUP_MAPPING = env.str("OIDC_GROUP_MAPPING", default="")
OIDC_OP_AUTHORIZATION_ENDPOINT = env.str("OIDC_OP_AUTHORIZATION_ENDPOINT", default="")
OIDC_OP_TOKEN_ENDPOINT = env.str("OIDC_OP_TOKEN_ENDPOINT", default="")
OIDC_OP_USER_ENDPOINT = env.str("OIDC_OP_USER_ENDPOINT", default="")
OIDC_OP_JWKS_ENDPOINT = env.str("OIDC_OP_JWKS_ENDPOINT", default="")
OIDC_OP_END_SESSION_ENDPOINT = env.str("OIDC_OP_END_SESSION_ENDPOINT", default="")
OIDC_TIMEOUT = env.float("OIDC_TIMEOUT_SECONDS", default=10)
OIDC_USE_PKCE = True
# Kept in the session for the end-session request's id_token_hint.
OIDC_STORE_ID_TOKEN = True
OIDC_AUTHENTICATION_CALLBACK_URL = "accounts:oidc_callback"
OIDC_OP_LOGOUT_URL_METHOD = "apps.accounts.oidc.end_session_url"


def sso_form_action(policy: dict, *urls: str) -> dict:
    """``policy`` with the origins of ``urls`` allowed as form targets: sign-out is a form
    whose answer redirects to the provider's end-session endpoint, and browsers hold every
    redirect of a form submission to ``form-action``."""
    origins = []
    for url in urls:
        if url:
            parts = urlsplit(url)
            origins.append(f"{parts.scheme}://{parts.netloc}")
    directives = dict(policy["DIRECTIVES"])
    directives["form-action"] = [*directives["form-action"], *sorted(set(origins))]
    return {**policy, "DIRECTIVES": directives}


CONTENT_SECURITY_POLICY = sso_form_action(
    CONTENT_SECURITY_POLICY, OIDC_ISSUER, OIDC_OP_END_SESSION_ENDPOINT
)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "apps.accounts.permissions.ReadOnlyTokenPermission",
        "apps.core.api_permissions.ModelPermissionsOrReadOnly",
    ],
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env.str("API_THROTTLE_ANON", default="60/minute"),
        "user": env.str("API_THROTTLE_USER", default="1200/minute"),
    },
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "apps.core.pagination.StrictLimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "apps.core.schema.GpufleetAutoSchema",
    # ProtectedError/RestrictedError → 409 JSON, not a 500 page.
    "EXCEPTION_HANDLER": "apps.core.api_errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "gpufleet API",
    "DESCRIPTION": (
        "GPU pools, workloads, utilization, cost and backups. Authenticate with "
        "`Authorization: Bearer <token>`; create tokens under Account → API tokens."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "apps.core.schema.tighten_decimal_patterns",
        "apps.core.schema.document_blank_filters",
    ],
    # Swagger UI assets come from the installed sidecar package: the docs work air-gapped.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # One enum per choice set, however many fields share it.
    "ENUM_NAME_OVERRIDES": {
        "InferencePrecisionEnum": "apps.pools.models.InferencePrecision",
        "TrainingPrecisionEnum": "apps.pools.models.TrainingPrecision",
        "BackupTierEnum": "apps.backups.models.Tier",
        "AlertChannelKindEnum": "apps.alerts.models.AlertChannel.Kind",
        "AlertRuleKindEnum": "apps.alerts.models.KIND_CHOICES",
        "PilotSourceFormatEnum": "apps.pilots.models.SourceFormat",
        "TrainingEventFormatEnum": "apps.training.parsers.FORMATS",
    },
    # The schema and its docs are for signed-in users, like every page.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}
API_TOKEN_DEFAULT_LIFETIME_DAYS = env.int("API_TOKEN_DEFAULT_LIFETIME_DAYS", default=90)

# Celery: a command run with no broker (no REDIS_URL, and no `manage.py run` running)
# does its tasks inline, so it finishes what it starts.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=CELERY_BROKER_URL or None)
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=not CELERY_BROKER_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_RESULT_EXPIRES = timedelta(days=1)
CELERY_TIMEZONE = "UTC"
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=30 * 60)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=25 * 60)
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="gpufleet")
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A task whose worker died unacknowledged goes back to the queue after this long (Redis
# has no consumer heartbeat); it must exceed the longest task's time limit.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT_SECONDS", default=2 * 60 * 60),
    # Such tasks are looked for every interval × throttle seconds (kombu's defaults: 10 × 10):
    # a short visibility timeout needs a shorter sweep to be felt.
    "unacked_restore_interval": env.int("CELERY_UNACKED_RESTORE_INTERVAL_SECONDS", default=10),
    "unacked_restore_throttle": env.int("CELERY_UNACKED_RESTORE_THROTTLE", default=10),
    # A broker that is down or drops packets must not hold a web request: publishing
    # gives up within seconds and the work waits in the outbox (apps/core/outbox.py).
    # The read timeout stays above the worker's 1 s BRPOP; a publisher's connection is
    # tried once (publishing retries on its own, CELERY_TASK_PUBLISH_RETRY_POLICY), not
    # for CELERY_BROKER_CONNECTION_TIMEOUT with 2 s pauses.
    "socket_connect_timeout": 1.0,
    "socket_timeout": 2.0,
    "max_retries": 0,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_BROKER_CONNECTION_TIMEOUT = 1.0
# Publishing retries twice at most, for a broker restart; the outbox retries the rest.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 1.0
CELERY_REDIS_SOCKET_TIMEOUT = 5.0
CELERY_BEAT_SCHEDULE = {
    "worker-heartbeat": {
        "task": "core.record_worker_heartbeat",
        "schedule": timedelta(seconds=60),
    },
}
CELERY_BEAT_SCHEDULE["drain-outbox"] = {
    # Work recorded while the broker was unreachable is published once it is back
    # (apps/core/outbox.py); beat itself needs the broker, so this runs from then on.
    "task": "core.drain_outbox",
    "schedule": timedelta(seconds=30),
    "options": {"expires": 25},
}
CELERY_BEAT_SCHEDULE["purge-raw-telemetry"] = {
    # Just after midnight UTC the retention horizon (an hour) is a midnight: on PostgreSQL
    # every expired day goes as a dropped partition and nothing is left for a DELETE; at
    # 23:00 the horizon's day would leave 23 hours of rows to delete
    # (apps/telemetry/rollups/retention.py).
    "task": "telemetry.purge_raw_samples",
    "schedule": crontab(hour=0, minute=10),
}
CELERY_BEAT_SCHEDULE["create-sample-partitions"] = {
    # Raw samples live in one partition per UTC day: every day of the retention window and
    # TELEMETRY_PARTITION_DAYS_AHEAD ahead has one, and rows that landed in the DEFAULT
    # partition get theirs (apps/telemetry/rollups/partitions.py). Workers also run it when they
    # start.
    "task": "telemetry.ensure_sample_partitions",
    "schedule": timedelta(hours=1),
    "options": {"expires": 50 * 60},
}
CELERY_BEAT_SCHEDULE["apply-due-prices"] = {
    # A price change scheduled for an hour (apps/pools/prices.py) becomes the pool's
    # current price, which lists and forecasts read, in the first minutes of that hour;
    # reports read the periods and never wait for it.
    "task": "pools.apply_due_prices",
    "schedule": crontab(minute=1),
}
CELERY_BEAT_SCHEDULE["purge-kept-uploads"] = {
    # Uploads kept for a retry go once TELEMETRY_KEPT_UPLOAD_HOURS have passed, even when
    # no further upload arrives to sweep them.
    "task": "telemetry.purge_kept_uploads",
    "schedule": timedelta(hours=1),
}
CELERY_BEAT_SCHEDULE["pull-telemetry-sources"] = {
    "task": "telemetry.pull_due_sources",
    # The finest pull interval a source can have (telemetry.models.MIN_PULL_INTERVAL_SECONDS).
    "schedule": timedelta(seconds=15),
    "options": {"expires": 12},
}
CELERY_BEAT_SCHEDULE["rollup-pending-telemetry"] = {
    # Pulled samples reach the hourly rollups within a minute (telemetry.PendingRollup);
    # uploads, the API and the command line ask for the same drain after their commit.
    "task": "telemetry.rollup_pending",
    "schedule": timedelta(seconds=60),
    "options": {"expires": 55},
}
CELERY_BEAT_SCHEDULE["refresh-drill-schedules"] = {
    # Which backup policies' restore drills are overdue (apps/backups/tasks.py).
    "task": "backups.refresh_drill_schedules",
    "schedule": timedelta(hours=24),
}
CELERY_BEAT_SCHEDULE["warm-report-cache"] = {
    # Cached report figures are keyed by the hour ("the last 24 hours" moves with it): at
    # each new hour the pages viewed lately are recomputed before anyone asks
    # (apps/reports/cache.py). Changes to the data queue their own warm-ups.
    "task": "reports.warm_report_cache",
    "schedule": crontab(minute=0),
    "options": {"expires": 50 * 60},
}
CELERY_BEAT_SCHEDULE["evaluate-alerts"] = {
    # Alert rules are evaluated every minute and what they raise is sent at once
    # (apps/alerts/services.py); `manage.py evaluate_alerts` does the same once.
    "task": "alerts.evaluate",
    "schedule": timedelta(seconds=60),
    "options": {"expires": 55},
}
CELERY_BEAT_SCHEDULE["deliver-alert-notifications"] = {
    # Retries come due 30 s, 1 min, 2 min, … after a failed attempt: looked for every 15 s.
    "task": "alerts.deliver",
    "schedule": timedelta(seconds=15),
    "options": {"expires": 12},
}
CELERY_BEAT_SCHEDULE["reap-stalled-runs"] = {
    # Imports, exports and recomputes whose worker stopped are marked interrupted and
    # retried within minutes, not after the visibility timeout (apps/core/runs.py).
    "task": "core.reap_stalled_runs",
    "schedule": timedelta(seconds=60),
    "options": {"expires": 55},
}
CELERY_BEAT_SCHEDULE["pull-slurm-accounting"] = {
    # Clusters with slurm_pull_enabled are pulled once their interval (at least 5 min)
    # has passed since their last pull (apps/slurm/pull.py).
    "task": "slurm.pull_due_clusters",
    "schedule": timedelta(minutes=1),
    "options": {"expires": 55},
}
CELERY_BEAT_SCHEDULE["send-slurm-efficiency-reports"] = {
    # Monday morning UTC: the week that ended at midnight (apps/alerts/slurm_reports.py).
    "task": "alerts.send_slurm_efficiency",
    "schedule": crontab(day_of_week="mon", hour=6, minute=0),
}
# sacct as the pulls run it: a name on PATH or a path; SLURM_CONF, when set, is passed to
# it (else sacct reads its default configuration or the environment's SLURM_CONF).
SLURM_SACCT = env.str("SLURM_SACCT", default="sacct")
SLURM_CONF = env.str("SLURM_CONF", default="")
SLURM_SACCT_TIMEOUT_SECONDS = env.int("SLURM_SACCT_TIMEOUT_SECONDS", default=300)
SLURM_PULL_OVERLAP_MINUTES = env.int("SLURM_PULL_OVERLAP_MINUTES", default=60)
SLURM_PULL_FIRST_DAYS = env.int("SLURM_PULL_FIRST_DAYS", default=7)
# A Slurm user name is a gpufleet user's username, else <name>@SLURM_EMAIL_DOMAIN is their
# address (the weekly efficiency email; blank: usernames only).
SLURM_EMAIL_DOMAIN = env.str("SLURM_EMAIL_DOMAIN", default="")
# A change of the Slurm mapping rules re-maps the stored jobs in the request when there are
# at most this many, else on a worker with its progress on the rules page (apps/slurm/remap.py).
SLURM_REMAP_INLINE_MAX_JOBS = env.int("SLURM_REMAP_INLINE_MAX_JOBS", default=5000)
# A background run writes its heartbeat at least this often while it runs; one not heard
# from for STALLED_RUN_AFTER_SECONDS is marked interrupted and retried, up to
# RUN_MAX_ATTEMPTS attempts in all (apps/core/runs.py).
RUN_HEARTBEAT_SECONDS = env.int("RUN_HEARTBEAT_SECONDS", default=30)
STALLED_RUN_AFTER_SECONDS = env.int("STALLED_RUN_AFTER_SECONDS", default=3 * 60)
RUN_MAX_ATTEMPTS = env.int("RUN_MAX_ATTEMPTS", default=3)
STALLED_RUN_REAPERS = [
    "apps.telemetry.ingest.importer.reap_stalled_imports",
    "apps.reports.recompute.reap_stalled_recomputes",
    "apps.procurement.exports.jobs.reap_stalled_exports",
    "apps.telemetry.rollups.retention.reap_stalled_purges",
    "apps.slurm.remap.reap_stalled_remaps",
]
# Recompute the report pages people viewed lately right after the data under them changes
# (apps/reports/cache.py); off, the first visitor after a change computes them.
REPORTS_WARM_UP = env.bool("REPORTS_WARM_UP", default=True)
# Lendable off-peak capacity of inference pools (apps/reports/lending/capacity.py): the GPUs kept
# back above the measured 95th percentile, as a share of the pool's GPUs rounded up.
# The currency pages, exports, budgets, alerts and /metrics speak in (ISO 4217): each pool's
# costs are converted from its own currency through US dollars at the month's rates
# (apps/currencies).
REPORTING_CURRENCY = env.str("REPORTING_CURRENCY", default="USD").strip().upper()
LENDING_SAFETY_MARGIN_PCT = env.int("LENDING_SAFETY_MARGIN_PCT", default=10)
# Raw GPU samples are kept this long; hourly rollups forever.
TELEMETRY_RAW_RETENTION_DAYS = env.int("TELEMETRY_RAW_RETENTION_DAYS", default=14)
# PostgreSQL: daily partitions of raw samples are made this many days ahead of today, so
# a night without beat or a node whose clock runs a little ahead still finds its day's.
TELEMETRY_PARTITION_DAYS_AHEAD = env.int("TELEMETRY_PARTITION_DAYS_AHEAD", default=7)
# Uploaded files are kept this long, so a wrong format or mapping is corrected without
# choosing the file again (apps/telemetry/ingest/kept_uploads.py).
TELEMETRY_KEPT_UPLOAD_HOURS = env.int("TELEMETRY_KEPT_UPLOAD_HOURS", default=24)
# A worker whose last heartbeat is older than this is reported as not alive on /healthz.
WORKER_HEARTBEAT_MAX_AGE = timedelta(minutes=3)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"axes": {"level": "WARNING"}},
}

# --- Alerts and /metrics (apps/alerts) -----------------------------------------------------
# Where people open gpufleet: the links in notifications (generatorURL, "Open in gpufleet")
# and Alertmanager's externalURL.
SITE_URL = env.str("SITE_URL", default="http://127.0.0.1:8000")
# Email channels go through Django's email backend, SMTP unless EMAIL_BACKEND says otherwise.
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=False)
EMAIL_USE_SSL = env.bool("EMAIL_USE_SSL", default=False)
EMAIL_TIMEOUT = env.float("EMAIL_TIMEOUT_SECONDS", default=10)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="gpufleet@localhost")
# A webhook or chat receiver that has not answered within this long is tried again later.
ALERT_HTTP_TIMEOUT_SECONDS = env.float("ALERT_HTTP_TIMEOUT_SECONDS", default=10)
# Retries wait base × 2^(attempt − 1), at most the maximum; a delivery is failed after
# so many attempts or hours, whichever comes first.
ALERT_RETRY_BASE_SECONDS = env.int("ALERT_RETRY_BASE_SECONDS", default=30)
ALERT_RETRY_MAX_SECONDS = env.int("ALERT_RETRY_MAX_SECONDS", default=3600)
ALERT_DELIVERY_MAX_ATTEMPTS = env.int("ALERT_DELIVERY_MAX_ATTEMPTS", default=30)
ALERT_DELIVERY_GIVE_UP_HOURS = env.float("ALERT_DELIVERY_GIVE_UP_HOURS", default=24)
# The Overview asks a person to look at a training workload once a failure now would cost
# more than this to redo from its newest proven checkpoint (apps/backups/at_risk.py).
DOLLARS_AT_RISK_ATTENTION_USD = env.float("DOLLARS_AT_RISK_ATTENTION_USD", default=1000)
# /metrics answers a scraper that sends `Authorization: Bearer METRICS_TOKEN` or comes
# from one of METRICS_ALLOWED_ADDRESSES (CIDRs, the direct peer's address); with neither
# set it answers 404, as if it did not exist (apps/alerts/metrics.py).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_ADDRESSES = env.list("METRICS_ALLOWED_ADDRESSES", default=[])
