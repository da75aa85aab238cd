"""``{{ drill.actual_rpo_seconds|in_unit:rpo_unit }}``: an RPO or RTO in the page's unit,
which the view picks with ``apps.backups.recovery_units.unit_for``.
``{{ policy.rpo_seconds|duration }}``: one value in the unit that suits it alone, for a
list whose rows each compare nothing with the others' (the fleet's targets column): a
60-minute RPO beside a 30-day one reads "60 min", not "0.042 days"."""

from django import template

from apps.backups.recovery_units import format_in, unit_for

register = template.Library()


@register.filter
def in_unit(seconds, unit):
    return format_in(seconds, unit)


@register.filter
def duration(seconds):
    return format_in(seconds, unit_for([seconds]))
