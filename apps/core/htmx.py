"""One view serves the page and its fragment (Luke Plant's pattern, django-htmx).

Page templates wrap their main column in ``{% partialdef content inline %}``; an htmx
request that is not a boosted navigation gets that partial alone, never ``<html>``.
"""

from django.template.response import TemplateResponse


def is_partial(request) -> bool:
    return bool(getattr(request, "htmx", False)) and not request.htmx.boosted


def render_page(request, template_name, context=None, *, partial="content", status=200):
    name = f"{template_name}#{partial}" if is_partial(request) else template_name
    return TemplateResponse(request, name, context or {}, status=status)
