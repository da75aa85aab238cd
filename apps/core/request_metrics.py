"""django-prometheus's request metrics, for requests whose headers it cannot read.

django-prometheus records each request's body size from its ``Content-Length`` header
with ``int()``: a header that is not a number (``Content-Length: 1/0``) raises in the
middleware, before any view, and the request answers 500. Django itself reads such a
header as no body (``WSGIRequest``), so the request is counted with a body of 0 bytes
and goes on to be answered as any other.
"""

from django_prometheus.middleware import PrometheusAfterMiddleware
from django_prometheus.utils import Time


class RequestMetricsMiddleware(PrometheusAfterMiddleware):
    def process_request(self, request):
        try:
            return super().process_request(request)
        except ValueError:  # the Content-Length header is not a number
            self.label_metric(self.metrics.requests_body_bytes, request).observe(0)
            request.prometheus_after_middleware_event = Time()
            return None
