"""One view serves the page and its fragments (Luke Plant's pattern, django-htmx).

A view names the fragments its page can return: ``fragments={"pool-table": "pool-table"}``
maps the id of the element an htmx request targets (``HX-Target``) to the inline partial
that replaces it, so no view compares ``request.htmx.target`` by hand. Partials are named
after their element. Any other htmx request that is not a boosted navigation gets the
page's content without ``base.html``'s chrome (``content_only``), never ``<html>``.
"""

from django.template.response import TemplateResponse


def is_partial(request) -> bool:
    return bool(getattr(request, "htmx", False)) and not request.htmx.boosted


def fragment_for(request, fragments) -> str | None:
    """The partial named for the element this htmx request targets, or None (a full page,
    or the page's content)."""
    if not is_partial(request) or not fragments:
        return None
    return fragments.get(request.htmx.target)


def render_page(request, template_name, context=None, *, fragments=None, partial=None, status=200):
    """The page, or for htmx the partial ``fragments`` names for the target; ``partial``
    is the partial every other htmx request gets (e.g. a drawer's body), else the page's
    content without its chrome."""
    context = context or {}
    if is_partial(request):
        name = fragment_for(request, fragments) or partial
        if name:
            return TemplateResponse(request, f"{template_name}#{name}", context, status=status)
        context = {**context, "content_only": True}
    return TemplateResponse(request, template_name, context, status=status)
