from django.contrib.auth import get_user_model
from django.http import HttpResponsePermanentRedirect, JsonResponse
from django.templatetags.static import static
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.core.guard import superuser_required
from apps.core.health import health_report
from apps.core.htmx import render_page
from apps.core.roles import ROLES


@superuser_required(message=_("Only administrators manage users."))
@require_GET
def user_list(request):
    """Who can sign in and with which role. Administering users is for superusers only."""
    users = get_user_model().objects.prefetch_related("groups").order_by("username")
    return render_page(request, "core/user_list.html", {"users": users, "roles": ROLES})


@never_cache
@require_GET
def healthz(request):
    body, status = health_report()
    return JsonResponse(body, status=status)


@require_GET
def favicon(request):
    """Browsers ask for /favicon.ico on pages that name no icon (Django's admin, the API's
    documentation): they get the site's icon, not a 404 in their console."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))
