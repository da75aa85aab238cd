from urllib.parse import urlencode

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext

from apps.reports.usage.peaks import describe_hours

register = template.Library()


@register.filter
def hour_ranges(hours):
    """{8, 9, 10, 20} → "8–10, 20"."""
    return describe_hours(hours) if hours else gettext("none")


@register.simple_tag
def explain_link(url_name: str, query: str, display, **params):
    """A figure as a link to how it was computed: htmx loads the explanation into the
    page's drawer (templates/reports/_explain_drawer.html); without JavaScript the link
    opens it as a page."""
    extra = urlencode({name: value for name, value in params.items() if value})
    joined = "&".join(part for part in (query, extra) if part)
    url = f"{reverse(url_name)}?{joined}"
    return format_html(
        '<a href="{url}" class="explain-link" hx-get="{url}" hx-target="#explain-body" '
        'hx-indicator="#explain-busy" data-bs-toggle="offcanvas" '
        'data-bs-target="#explain-drawer" aria-controls="explain-drawer" '
        'title="{title}">{display}</a>',
        url=url,
        title=gettext("How this figure is computed"),
        display=display,
    )
