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
