from django import template

from apps.reports.queries import describe_hours

register = template.Library()


@register.filter
def hour_ranges(hours):
    """{8, 9, 10, 20} → "8–10, 20"."""
    return describe_hours(hours)
