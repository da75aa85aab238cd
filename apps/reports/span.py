"""The span every figure is summed over: whole UTC hours, [start, end).

The cost, usage and lending figures all read the hourly and daily rollups over a
``Span``; its whole days are read from the daily rows, its partial days at the edges
from the hourly rows."""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import Q
from django.utils import timezone

from apps.pools.hours import ceil_hour, floor_hour

ONE_HOUR = timedelta(hours=1)
ONE_DAY = timedelta(days=1)
EARLIEST = datetime(2020, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Span:
    """[start, end) on whole UTC hours, never past the current hour's end."""

    start: datetime
    end: datetime

    @classmethod
    def of(cls, start: datetime, end: datetime) -> "Span":
        now_end = floor_hour(timezone.now()) + ONE_HOUR
        # Nothing gpufleet records predates its first release; the floor bounds the
        # hour-by-hour arithmetic of a query for year 1.
        start = max(start, EARLIEST)
        start, end = floor_hour(start), min(ceil_hour(end), now_end)
        return cls(start, max(start, end))

    @classmethod
    def last_hours(cls, now: datetime, hours: int) -> "Span":
        """The last ``hours`` h at ``now``: the ``hours`` whole UTC hour-slots ending
        with the current one, [floor(now) − (hours − 1) h, floor(now) + 1 h).

        Every trailing window (the Overview's last 24 h and 7 days, the alert rules'
        windows, ``/metrics``) is this span, so it pays exactly ``hours`` hours of each
        pool in service throughout (GPUs × price × ``hours``), and the current hour's
        telemetry counts as soon as it is rolled up. Its capacity, cost and busy
        GPU-hours are sums over these same slots; its utilisation divides the busy by
        the measured capacity of the hours with telemetry among them."""
        end = floor_hour(now) + ONE_HOUR
        start = max(end - hours * ONE_HOUR, EARLIEST)
        return cls(start, max(start, end))

    @property
    def hours(self) -> int:
        return int((self.end - self.start) / ONE_HOUR)

    def whole_days(self) -> tuple[date, date]:
        """[first, last) UTC days lying wholly inside the span (first == last: none)."""
        first = self.start.date() if self.start.hour == 0 else self.start.date() + timedelta(1)
        last = self.end.date()
        return first, max(first, last)

    def edge_filter(self) -> Q:
        """Hours of the span outside its whole days."""
        first, last = self.whole_days()
        if first == last:
            return Q(hour__gte=self.start, hour__lt=self.end)
        first_at = datetime.combine(first, time.min, tzinfo=UTC)
        last_at = datetime.combine(last, time.min, tzinfo=UTC)
        return Q(hour__gte=self.start, hour__lt=first_at) | Q(hour__gte=last_at, hour__lt=self.end)
