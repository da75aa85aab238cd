"""The report's results partial, rendered from its figures (apps/reports/selectors.py) and
cached beside them: the rendered table costs more than reading the figures back
(bench/dashboard.py). Rendering reads no request, so a worker renders it as a page would."""

from django.http import QueryDict
from django.template.loader import render_to_string

from apps.accounts.scope import EVERYTHING, Scope
from apps.core.tables import PAGE_SIZE, paginate_table
from apps.reports import selectors
from apps.reports.cache import cached
from apps.reports.forms import GROUP_BY_LABELS, GROUP_BY_NOUNS
from apps.reports.tables import ReportTable


def results_cache_parameters(data: dict, query: str, scope: Scope = EVERYTHING) -> dict:
    """Cache parameters of the rendered partial: the filters, the viewer's scope and the
    query string its links carry."""
    return {**selectors.report_cache_filters(data, scope), "query": query}


# Rows of the report's table a page shows, as every list's: a large fleet's rows go on
# pages (each row carries its figures' links to their explanations, and what a page
# weighs is most of what a cached report costs to serve); a sort orders every row, the
# total row is the whole report's, the exports hold every row.
TABLE_PAGE_ROWS = PAGE_SIZE


def _report_table(figures: dict, query: QueryDict) -> ReportTable:
    table = ReportTable(
        figures["rows"],
        group_by=figures["group_by"],
        group_label=GROUP_BY_LABELS[figures["group_by"]],
        query=query,
    )
    paginate_table(table, query.get(table.prefixed_page_field), per_page=TABLE_PAGE_ROWS)
    return table


def _results_context(form, query: str, figures: dict | None) -> dict:
    context = {**(figures or {}), "form": form, "explain_query": query}
    if figures:
        context["group_by_label"] = GROUP_BY_NOUNS[figures["group_by"]]
        context["report_table"] = _report_table(figures, QueryDict(query))
        # The peak split's table keeps to one page's rows too, by name as it comes.
        context["peak_rows_shown"] = figures["peak_rows"][:TABLE_PAGE_ROWS]
    return context


def render_results(form, query: str, figures: dict | None = None) -> str:
    """The results partial of ``form`` (figures or its errors); each figure links to its
    explanation, and the exports to their files, under the same filters (``query``), whose
    ``sort`` orders the table."""
    return render_to_string(
        "reports/report.html#results_body", _results_context(form, query, figures)
    )


def report_table_html(form, query: str, figures: dict) -> str:
    """The table alone (``#report-rows``), as a sort header swaps it; cached like the
    results partial."""
    return cached(
        "report-table-html",
        results_cache_parameters(form.cleaned_data, query, form.scope),
        lambda: render_to_string(
            "reports/report.html#report-rows", _results_context(form, query, figures)
        ),
    )


def report_results(form, query: str, progress=None) -> tuple[dict, str]:
    """The figures of a valid filter form and its rendered results partial, both cached."""
    figures = selectors.report_figures(form.cleaned_data, progress, form.scope)
    html = cached(
        "report-html",
        results_cache_parameters(form.cleaned_data, query, form.scope),
        lambda: render_results(form, query, figures),
    )
    return figures, html


def filter_fields_html(form, query_string: str) -> str:
    """The filter fields, rendered; cached for valid filters, because Django renders each
    of the pool list's options through a template, a cost that grows with the fleet, and
    the list changes only with a pool, which bumps the version."""

    def render():
        return render_to_string("reports/report.html#filter_fields", {"form": form})

    if not form.is_valid():
        return render()
    # The pool choices are the viewer's scope's.
    return cached(
        "report-filter-fields", {"query": query_string, "scope": form.scope.cache_key}, render
    )
