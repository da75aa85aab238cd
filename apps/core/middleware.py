"""Requests whose query parameters or form fields hold a NUL character answer 400, as do
form bodies that cannot be parsed at all (a multipart body without its boundary).

PostgreSQL cannot store or compare text holding NUL: a filter reading ``?pool=%00`` into
a query raises DataError, a 500. Django's form fields refuse NUL, but many views read
parameters without a form. Uploaded files are not read here: a NUL inside a file is the
import's to refuse, with its line. Form bodies are parsed as CsrfViewMiddleware parses them
anyway, before any view.
"""

from django.http import HttpResponseBadRequest, JsonResponse
from django.http.multipartparser import MultiPartParserError

NUL = "\x00"
FORM_CONTENT_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _nul_parameter(request) -> tuple[str, str] | None:
    """(where, name) of the first parameter holding a NUL character, or None."""
    sources = [("query parameter", request.GET)]
    if request.method == "POST" and request.content_type in FORM_CONTENT_TYPES:
        sources.append(("form field", request.POST))
    for where, parameters in sources:
        for name, values in parameters.lists():
            if NUL in name or any(NUL in value for value in values):
                return where, name.replace(NUL, "\\x00")
    return None


class RefuseNulCharactersMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            found = _nul_parameter(request)
        except MultiPartParserError as error:
            # A multipart body without its boundary, or cut short: nothing can read it.
            return _bad_request(
                request,
                f"The request body could not be read as multipart/form-data ({error}); send "
                "it with its boundary in the Content-Type, or as JSON.",
            )
        if found is None:
            return self.get_response(request)
        where, name = found
        return _bad_request(
            request,
            f"The {where} “{name}” holds a NUL character (\\x00), which no value here can "
            "contain; remove it and try again.",
        )


def _bad_request(request, sentence: str):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": sentence}, status=400)
    return HttpResponseBadRequest(sentence, content_type="text/plain; charset=utf-8")
