"""Numbers on the scenario page, formatted exactly as the exports format them."""

from django import template

from apps.procurement import exports

register = template.Library()


@register.filter
def amount(value, places=0):
    return exports.amount(value, places)


@register.filter
def share(fraction):
    return exports.percent(fraction)
