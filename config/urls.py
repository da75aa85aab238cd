from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.i18n import set_language
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from apps.accounts.oidc import SignOutView
from apps.alerts import views as alert_views
from apps.core.views import favicon, healthz

urlpatterns = [
    path("", include("apps.dashboard.urls")),
    path("", include("apps.core.urls")),
    path("", include("apps.pools.urls")),
    path("", include("apps.pilots.urls")),
    path("catalog/", include("apps.catalog.urls")),
    path("clusters/", include("apps.clusters.urls")),
    path("slurm/", include("apps.slurm.urls")),
    path("exchange-rates/", include("apps.currencies.urls")),
    path("telemetry/", include("apps.telemetry.urls")),
    path("training/", include("apps.training.urls")),
    path("", include("apps.reports.urls")),
    path("procurement/", include("apps.procurement.urls")),
    path("backups/", include("apps.backups.urls")),
    path("", include("apps.accounts.urls")),
    path("alerts/", include("apps.alerts.urls")),
    path("", include("apps.showback.urls")),
    path("bills/", include("apps.bills.urls")),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    # Signs out of the provider too after an SSO sign-in (apps/accounts/oidc.py).
    path("logout/", SignOutView.as_view(), name="logout"),
    path("healthz", login_not_required(healthz), name="healthz"),
    path("favicon.ico", login_not_required(favicon), name="favicon"),
    # Prometheus text, for a scraper with the token or an allowed address (apps/alerts).
    path("metrics", alert_views.metrics, name="metrics"),
    # The sign-in page offers the language too, before anyone is signed in.
    path("i18n/setlang/", login_not_required(set_language), name="set_language"),
    path("api/v1/", include("config.api_urls")),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/v1/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"
    ),
    path("admin/", admin.site.urls),
]

handler404 = "apps.core.errors.page_not_found"
handler500 = "apps.core.errors.server_error"
