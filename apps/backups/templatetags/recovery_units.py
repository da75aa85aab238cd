"""``{{ drill.actual_rpo_seconds|in_unit:rpo_unit }}``: an RPO or RTO in the page's unit,
which the view picks with ``apps.backups.recovery_units.unit_for``."""

from django import template

from apps.backups.recovery_units import format_in

register = template.Library()


@register.filter
def in_unit(seconds, unit):
    return format_in(seconds, unit)
