"""The project's URLs and one view that fails, for the server error page's tests."""

from django.urls import path

from config.urls import handler404, handler500, urlpatterns  # noqa: F401


def fails(request):
    raise RuntimeError("a failure the page must not show")


urlpatterns = [
    path("fails/", fails),
    path("api/v1/fails/", fails),
    *urlpatterns,
]
