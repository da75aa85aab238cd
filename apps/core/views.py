from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.core.health import health_report
from apps.core.htmx import render_page
from apps.core.roles import ROLES
from apps.pools.charts import build_gpus_by_purpose_figure, build_pool_hourly_price_figure
from apps.pools.models import Pool, Purpose, Workload


@require_GET
def overview(request):
    pools = list(Pool.objects.all())
    gpus_by_purpose = {purpose.value: 0 for purpose in Purpose} | Pool.objects.gpus_by_purpose()
    totals = Pool.objects.totals()
    context = {
        "pools": pools,
        "totals": totals,
        "gpus_by_purpose": [
            (purpose.label, purpose.value, gpus_by_purpose[purpose.value]) for purpose in Purpose
        ],
        "workload_count": Workload.objects.count(),
        "gpus_by_purpose_figure": build_gpus_by_purpose_figure(
            gpus_by_purpose, dict(Purpose.choices)
        ),
        "pool_price_figure": build_pool_hourly_price_figure(pools),
    }
    return render_page(request, "core/overview.html", context)


@require_GET
def backups(request):
    return render_page(request, "core/backups.html")


@require_GET
def reports(request):
    return render_page(request, "core/reports.html")


@require_GET
def procurement(request):
    return render_page(request, "core/procurement.html")


@require_GET
def user_list(request):
    """Who can sign in and with which role. Administering users is for superusers only."""
    if not request.user.is_superuser:
        raise PermissionDenied("Only administrators manage users.")
    users = get_user_model().objects.prefetch_related("groups").order_by("username")
    return render_page(request, "core/user_list.html", {"users": users, "roles": ROLES})


@never_cache
@require_GET
def healthz(request):
    body, status = health_report()
    return JsonResponse(body, status=status)
