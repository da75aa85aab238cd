"""The list pages' tables: django-tables2 classes drawn by ``components/_table.html``.

Every list page is one view serving the page and, for htmx, the table alone: the sort
headers and the pagination links ``hx-get`` the same URL with their query string, swap
the element ``element_id`` names and push the URL, so a sorted or filtered list can be
shared and reloaded. Ordering and filtering happen in SQL (``order_by`` on columns,
django-filter FilterSets).
"""

import django_tables2 as tables
from django.core.paginator import EmptyPage, Page, PageNotAnInteger
from django.db.models import F
from django.template import Context
from django.template.loader import get_template
from django_tables2 import RequestConfig
from django_tables2.data import TableListData
from django_tables2.utils import Accessor

PAGE_SIZE = 25
# A column of numbers: header and cells aligned right.
END_ALIGNED = {"th": {"class": "text-end"}, "td": {"class": "text-end"}}


class CellColumn(tables.Column):
    """A cell drawn by a template (usually a partial, ``"pools/_pool_cells.html#name"``)
    with the page's context plus ``record``. Unlike ``TemplateColumn(template_name=...)``
    it renders into the page's context, so the context processors (a query for the user's
    roles) do not run again for every cell."""

    def __init__(self, template_name, *, nulls_last=False, **kwargs):
        kwargs.setdefault("empty_values", ())
        # The template reads ``record``: no attribute is looked up (or method called) for
        # a value the cell does not use.
        kwargs.setdefault("accessor", tables.A("pk"))
        super().__init__(**kwargs)
        self.template_name = template_name
        self.nulls_last = nulls_last

    def order(self, queryset, is_descending):
        """With ``nulls_last``, rows without a value (NULL) come last both ways: a column
        of figures some rows lack, whose "—" would otherwise lead one of the two orders
        (PostgreSQL puts NULLs first when descending)."""
        if not self.nulls_last or self.order_by is None:
            return queryset, False
        fields = [field.bare.replace(".", "__") for field in self.order_by]
        if is_descending:
            return queryset.order_by(*(F(field).desc(nulls_last=True) for field in fields)), True
        return queryset.order_by(*(F(field).asc(nulls_last=True) for field in fields)), True

    def render(self, record, table, value, bound_column, **kwargs):
        template = get_template(self.template_name).template
        context = getattr(table, "context", None) or Context()
        with context.update({"record": record, "value": value, "column": bound_column}):
            return template.render(context)


def cells(template_name: str):
    """A maker of the CellColumns drawn by the partials of ``template_name``:
    ``cell(partial, label, *sort_fields, end=False, **column_options)``. Without sort fields
    the column is not sortable; ``end`` aligns a column of numbers right; ``nulls_last``
    sorts the rows without a value last, ascending or descending."""

    def cell(partial: str, label, *sort_fields: str, end: bool = False, **options):
        if sort_fields:
            options["order_by"] = sort_fields
        else:
            options["orderable"] = False
        if end:
            options.setdefault("attrs", END_ALIGNED)
        return CellColumn(f"{template_name}#{partial}", verbose_name=label, **options)

    return cell


class RowsData(TableListData):
    """Rows computed in Python (dataclasses, dicts), sorted here: stable, and with the
    missing values (None) last whichever way, as the SQL of ``nulls_last`` columns, so a
    "—" never leads a sorted column."""

    def order_by(self, aliases):
        sort_keys = []
        for alias in aliases:
            bound_column = self.table.columns[alias.lstrip("-")]
            # The column's own sort fields, flipped as a whole when descending.
            if alias.startswith("-") != bound_column.order_by_alias.is_descending:
                sort_keys += bound_column.order_by.opposite
            else:
                sort_keys += bound_column.order_by
        # Least significant key first: each stable pass keeps the order of its ties.
        for sort_key in reversed(sort_keys):
            accessor = Accessor(sort_key.bare)
            known, missing = [], []
            for row in self.data:
                (missing if accessor.resolve(row, quiet=True) is None else known).append(row)
            known.sort(key=accessor.resolve, reverse=sort_key.is_descending)
            self.data = known + missing


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
    # The query string the sort links change: None for the request's own. A table drawn
    # without a request (a worker rendering a page ahead of its visit) sets it.
    query = None

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


def paginate_table(table, number, *, per_page=PAGE_SIZE) -> None:
    """Show page ``number`` of ``per_page`` rows, as ``Paginator.get_page`` does: a bad
    or missing number is page 1, one past the end the last page."""
    try:
        table.paginate(page=number or 1, per_page=per_page)
    except PageNotAnInteger:
        table.paginate(page=1, per_page=per_page)
    except EmptyPage:
        table.paginate(page=table.paginator.num_pages, per_page=per_page)


def configure_table(request, table, *, per_page=PAGE_SIZE):
    """Sort from ``?sort=`` and show page ``?page=`` of ``per_page`` rows (None: all), as
    ``Paginator.get_page`` does: a bad number is page 1, one past the end the last page.
    Returns the page of records (model instances, not table rows), or None."""
    RequestConfig(request, paginate=False).configure(table)
    if not per_page:
        return None
    paginate_table(table, request.GET.get(table.prefixed_page_field), per_page=per_page)
    records = [row.record for row in table.page.object_list]
    return Page(records, table.page.number, table.paginator)
