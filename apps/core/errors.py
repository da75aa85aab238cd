from django.http import JsonResponse
from django.views import defaults


def page_not_found(request, exception):
    """API clients get DRF's JSON 404, people get the 404 page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)
