from urllib.parse import urlencode

from django import template
from django.template.loader import get_template

register = template.Library()


@register.simple_tag(takes_context=True)
def list_table(context, table):
    """Draw a ``ListTable`` (apps/core/tables.py) in the page's own context.

    django-tables2's ``{% render_table %}`` gives its template only ``table`` and the
    context processors; the list components need the page's figures too (the pool totals,
    whether a filter is set, the time the drill schedule is measured from)."""
    table.context = context  # read by CellColumn, as TemplateColumn reads it
    try:
        table.before_render(context.get("request"))
        with context.update({"table": table}):
            return get_template(table.template_name).template.render(context)
    finally:
        del table.context


@register.simple_tag(takes_context=True)
def sort_url(context, table, column):
    """``?…`` that sorts ``table`` by ``column`` the other way (or first way), keeping
    every other parameter of the query but the page, as django-tables2's
    ``querystring_replace``. The query is the table's own (``ListTable.query``) when it
    is drawn without a request, else the request's."""
    query = table.query if table.query is not None else context["request"].GET
    params = dict(query.lists())
    params[table.prefixed_order_by_field] = column.order_by_alias.next
    params.pop(table.prefixed_page_field, None)
    return "?" + urlencode(params, doseq=True)


@register.simple_tag(takes_context=True)
def page_url(context, table, number):
    """``?…`` that shows page ``number`` of ``table``, keeping every other parameter, as
    django-tables2's ``querystring_replace``; from the table's own query when it is drawn
    without a request (``ListTable.query``), as ``sort_url``."""
    query = table.query if table.query is not None else context["request"].GET
    params = dict(query.lists())
    params[table.prefixed_page_field] = number
    return "?" + urlencode(params, doseq=True)
