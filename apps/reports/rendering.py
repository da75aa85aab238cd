"""The report's results partial, rendered from its figures (apps/reports/selectors.py) and
cached beside them: the rendered table costs more than reading the figures back
(bench/dashboard.py). Rendering reads no request, so a worker renders it as a page would."""

from django.template.loader import render_to_string

from apps.reports import selectors
from apps.reports.cache import cached


def results_cache_parameters(data: dict, query: str) -> dict:
    """Cache parameters of the rendered partial: the filters and the query string its
    links carry."""
    return {**selectors.report_cache_filters(data), "query": query}


def render_results(form, query: str, figures: dict | None = None) -> str:
    """The results partial of ``form`` (figures or its errors); each figure links to its
    explanation, and the exports to their files, under the same filters (``query``)."""
    context = {**(figures or {}), "form": form, "explain_query": query}
    return render_to_string("reports/report.html#results_body", context)


def report_results(form, query: str, progress=None) -> tuple[dict, str]:
    """The figures of a valid filter form and its rendered results partial, both cached."""
    figures = selectors.report_figures(form.cleaned_data, progress)
    html = cached(
        "report-html",
        results_cache_parameters(form.cleaned_data, query),
        lambda: render_results(form, query, figures),
    )
    return figures, html


def filter_fields_html(form, query_string: str) -> str:
    """The filter fields, rendered; cached for valid filters, because Django renders each
    of the pool list's options through a template (a 100-pool fleet: ~20 ms a page,
    bench/dashboard.py) and the list changes only with a pool, which bumps the version."""

    def render():
        return render_to_string("reports/report.html#filter_fields", {"form": form})

    if not form.is_valid():
        return render()
    return cached("report-filter-fields", {"query": query_string}, render)
