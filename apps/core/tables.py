"""The list pages' tables: django-tables2 classes drawn by ``components/_table.html``.

Every list page is one view serving the page and, for htmx, the table alone: the sort
headers and the pagination links ``hx-get`` the same URL with their query string, swap
the element ``element_id`` names and push the URL, so a sorted or filtered list can be
shared and reloaded. Ordering and filtering happen in SQL (``order_by`` on columns,
django-filter FilterSets).
"""

import django_tables2 as tables
from django.core.paginator import EmptyPage, Page, PageNotAnInteger
from django.template import Context
from django.template.loader import get_template
from django_tables2 import RequestConfig

PAGE_SIZE = 25


class CellColumn(tables.Column):
    """A cell drawn by a template (usually a partial, ``"pools/_pool_cells.html#name"``)
    with the page's context plus ``record``. Unlike ``TemplateColumn(template_name=...)``
    it renders into the page's context, so the context processors (a query for the user's
    roles) do not run again for every cell."""

    def __init__(self, template_name, **kwargs):
        kwargs.setdefault("empty_values", ())
        # The template reads ``record``: no attribute is looked up (or method called) for
        # a value the cell does not use.
        kwargs.setdefault("accessor", tables.A("pk"))
        super().__init__(**kwargs)
        self.template_name = template_name

    def render(self, record, table, value, bound_column, **kwargs):
        template = get_template(self.template_name).template
        context = getattr(table, "context", None) or Context()
        with context.update({"record": record, "value": value, "column": bound_column}):
            return template.render(context)


class ListTable(tables.Table):
    # The element an htmx sort or page request replaces; the view's ``fragments`` maps it
    # to the partial holding ``{% render_table %}``.
    element_id = "table"
    # Shown in the card body when no row matches; it sees the page's context.
    empty_template = "components/_empty.html"
    # A ``<tr>`` (or several) for ``<tfoot>``, e.g. totals over the filtered rows.
    footer_template = None
    # A filter form outside the table carries the sort as a hidden input
    # (components/_table_sort_input.html); an htmx swap of the table updates it out of
    # band, so a filter change keeps the column the list is sorted by.
    has_filter_form = False

    class Meta:
        template_name = "components/_table.html"
        attrs = {"class": "table card-table table-vcenter"}
        order_by_field = "sort"
        page_field = "page"

    @property
    def has_rows(self) -> bool:
        # The paginator has counted already: no second COUNT query.
        if getattr(self, "page", None):
            return self.paginator.count > 0
        return len(self.rows) > 0

    @property
    def sort_input_id(self) -> str:
        return f"{self.element_id}-sort"

    @property
    def current_sort(self) -> str:
        return ",".join(self.order_by) if self.order_by else ""


def configure_table(request, table, *, per_page=PAGE_SIZE):
    """Sort from ``?sort=`` and show page ``?page=`` of ``per_page`` rows (None: all), as
    ``Paginator.get_page`` does: a bad number is page 1, one past the end the last page.
    Returns the page of records (model instances, not table rows), or None."""
    RequestConfig(request, paginate=False).configure(table)
    if not per_page:
        return None
    number = request.GET.get(table.prefixed_page_field) or 1
    try:
        table.paginate(page=number, per_page=per_page)
    except PageNotAnInteger:
        table.paginate(page=1, per_page=per_page)
    except EmptyPage:
        table.paginate(page=table.paginator.num_pages, per_page=per_page)
    records = [row.record for row in table.page.object_list]
    return Page(records, table.page.number, table.paginator)
