from django.core.exceptions import ValidationError

from apps.core.texts import translated
from apps.pools.hours import parse_hour_ranges, zone_or_error


def validate_hour_ranges(value: str):
    try:
        parse_hour_ranges(value)
    except ValueError as error:
        raise ValidationError(translated(error)) from None


def validate_timezone(value: str):
    try:
        zone_or_error(value)
    except ValueError as error:
        raise ValidationError(translated(error)) from None
