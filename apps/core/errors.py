import logging
import uuid

from django.http import HttpResponseServerError, JsonResponse
from django.template import loader
from django.views import defaults

logger = logging.getLogger("gpufleet.errors")


def page_not_found(request, exception):
    """API clients get DRF's JSON 404, people get the 404 page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    """A plain page, or JSON for the API, with a reference that the log line of the
    failure carries too: who saw it can say which failure it was, and no traceback or
    setting is shown. Called while the exception is handled, so it is logged here."""
    reference = uuid.uuid4().hex[:12]
    logger.error("Server error %s on %s %s", reference, request.method, request.path, exc_info=True)
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Server error.", "reference": reference}, status=500)
    html = loader.get_template("500.html").render({"reference": reference})
    return HttpResponseServerError(html)
