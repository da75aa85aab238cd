"""``?month=YYYY-MM``: the month a showback covers, up to now for the current one."""

import re
from datetime import UTC, datetime

from django.utils.translation import gettext

from apps.showback.burndown import next_month_start

MONTH = re.compile(r"(\d{4})-(\d{2})")


def parse_month(text: str | None, now: datetime) -> datetime | None:
    """The first instant of the month ``text`` names (empty: ``now``'s), or None when it
    is not a month of the form 2026-12."""
    if not text:
        return datetime(now.year, now.month, 1, tzinfo=UTC)
    match = MONTH.fullmatch(text.strip())
    if not match or not 1 <= int(match.group(2)) <= 12 or int(match.group(1)) < 2000:
        return None
    return datetime(int(match.group(1)), int(match.group(2)), 1, tzinfo=UTC)


def month_span(start: datetime, now: datetime) -> tuple[datetime, datetime]:
    """[start, end) of the month, its end never past now."""
    return start, min(next_month_start(start.date()), now)


def last_complete_month(now: datetime) -> datetime:
    """The first instant of the month before ``now``'s."""
    if now.month == 1:
        return datetime(now.year - 1, 12, 1, tzinfo=UTC)
    return datetime(now.year, now.month - 1, 1, tzinfo=UTC)


def not_a_month_sentence(text: str) -> str:
    return gettext("“%(month)s” is not a month: type it as 2026-12.") % {"month": text}
