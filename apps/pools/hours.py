"""Hours of the day and time zones as people type them (framework-free).

``parse_hour_ranges("8,9,20-22")`` → ``frozenset({8, 9, 20, 21, 22})``. A range names its
first and last hour, both included, as a shop's opening hours do ("9-18" is 09:00–18:59).
A range may wrap past midnight ("22-2" is 22, 23, 0, 1, 2).
"""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apps.core.sentences import gettext_noop, sentence

ONE_HOUR = timedelta(hours=1)


def floor_hour(moment: datetime) -> datetime:
    """The start of the UTC hour ``moment`` falls in."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def ceil_hour(moment: datetime) -> datetime:
    """``moment`` itself on a whole UTC hour, else the start of the next one."""
    floored = floor_hour(moment)
    return floored if floored == moment.astimezone(UTC) else floored + ONE_HOUR


def parse_hour_ranges(text: str) -> frozenset[int]:
    """The hours named by ``text``; raises ValueError naming the part that is wrong."""
    hours: set[int] = set()
    for part in (piece.strip() for piece in text.split(",")):
        if not part:
            continue
        first_text, _, last_text = part.partition("-")
        try:
            first = int(first_text)
            last = int(last_text) if last_text else first
        except ValueError:
            raise ValueError(
                sentence(
                    gettext_noop("“%(part)s” is not an hour (0–23) or a range like 9-18"),
                    part=part,
                )
            ) from None
        for hour in (first, last):
            if not 0 <= hour <= 23:
                raise ValueError(
                    sentence(gettext_noop("“%(part)s”: hours go from 0 to 23"), part=part)
                )
        span = (last - first) % 24
        hours.update((first + step) % 24 for step in range(span + 1))
    return frozenset(hours)


def zone_or_error(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; raises ValueError with a readable message."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            sentence(
                gettext_noop("“%(name)s” is not an IANA time zone (e.g. UTC, Europe/Paris)"),
                name=name,
            )
        ) from None
