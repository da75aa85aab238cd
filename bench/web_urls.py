"""gpufleet's URLs plus the benchmark's baseline: a bare page that a signed-in user gets
through every middleware (session, sign-in, idle timeout, CSP, …) and that renders the
base template, as bench/dashboard.py's baseline does, with nothing of its own."""

from django.template.response import TemplateResponse
from django.urls import include, path
from django.views.decorators.http import require_GET


@require_GET
def bare(request):
    return TemplateResponse(request, "base.html", {})


urlpatterns = [
    path("bench/bare/", bare, name="bench_bare"),
    path("", include("config.urls")),
]

handler404 = "apps.core.errors.page_not_found"
