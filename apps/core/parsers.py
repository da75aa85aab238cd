"""A JSON request parser with its own size limit, for endpoints that take large bodies."""

import json

from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser


class RequestBodyTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "request_too_large"


class BoundedJSONParser(BaseParser):
    """Parses JSON bodies of up to ``max_body_bytes``; a larger one is refused with 413
    and a JSON reason.

    DRF reads a body for its JSONParser through ``request.body``, which applies the
    site-wide DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) and answers an HTML 400 past it. This
    parser is not a JSONParser, so DRF hands it the stream instead and the endpoint's own
    limit applies; every other endpoint keeps the site-wide one.
    """

    media_type = "application/json"
    max_body_bytes = 0
    # What the limit is for, in the refusal ("the text may hold 20,000,000 characters").
    limit_sentence = ""

    def _refuse(self):
        raise RequestBodyTooLarge(
            f"The request body is too large: at most {self.max_body_bytes:,} bytes are "
            f"read here. {self.limit_sentence}".strip()
        )

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        if request is not None:
            try:
                declared_bytes = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                declared_bytes = 0
            if declared_bytes > self.max_body_bytes:
                self._refuse()
        body = stream.read(self.max_body_bytes + 1)
        if len(body) > self.max_body_bytes:
            self._refuse()
        try:
            return json.loads(body)
        except ValueError as error:
            raise ParseError(f"JSON parse error - {error}") from error
