"""Importing training event logs, and reading a workload's measured goodput.

Guarantees, as telemetry's imports give them:

- errors name their line and what was expected;
- an import is all-or-nothing: one bad line and nothing is stored (the failed run is
  kept with its errors, so the page and the API can say which lines);
- re-importing the same log stores nothing new: an event's identity (workload, job,
  type, instant, step, node rank) is a unique key, and the run counts what was already
  there as duplicates.
"""

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from apps.core.sentences import gettext_noop, sentence, to_data
from apps.currencies.rates import UsdPrice, usd_price, usd_rates_at
from apps.pools.models import Workload
from apps.training import goodput, parsers
from apps.training.models import TrainingEvent, TrainingImportRun


def content_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# The rejected lines kept with a failed run; the message still counts them all.
MAX_ERRORS_KEPT = 200


def _failed(run: TrainingImportRun, message, errors=()) -> TrainingImportRun:
    run.status = TrainingImportRun.Status.FAILED
    run.message = str(message)
    run.message_parts = to_data(message)
    run.errors = [
        {
            "line": error.line_number,
            "message": str(error.message),
            "message_parts": to_data(error.message),
        }
        for error in list(errors)[:MAX_ERRORS_KEPT]
    ]
    run.save()
    return run


def import_events(
    *,
    workload: Workload,
    text: str,
    format: str,
    source: str,
    columns: dict[str, str] | None = None,
    filename: str = "",
    user=None,
) -> TrainingImportRun:
    """Parse ``text`` and store its events for ``workload``; the run says what happened.

    The caller has checked that ``workload`` is in the user's scope.
    """
    run = TrainingImportRun(
        workload=workload,
        format=format,
        source=source,
        filename=filename[:255],
        content_sha256=content_sha256(text),
        created_by=user if user is not None and user.is_authenticated else None,
    )
    try:
        parsed = parsers.parse(text, format=format, columns=columns)
    except parsers.TrainingFormatError as error:
        return _failed(run, error.args[0])
    if parsed.errors:
        message = sentence(
            gettext_noop(
                "Nothing was imported: %(count)s problem(s), the first on line %(line)s. "
                "Fix the lines listed and import the file again."
            ),
            count=len(parsed.errors),
            line=parsed.errors[0].line_number,
        )
        return _failed(run, message, parsed.errors)

    with transaction.atomic():
        # The workload's row is locked so that two imports of one log do not both count
        # the same events as new.
        Workload.objects.select_for_update().filter(pk=workload.pk).first()
        rows_by_identity = {}
        for row in parsed.rows:
            identity = (row.job_name, row.event_type, row.timestamp, row.step, row.node_rank)
            rows_by_identity.setdefault(identity, row)
        job_names = {row.job_name for row in parsed.rows}
        existing = {
            (job_name, event_type, timestamp, step, node_rank)
            for job_name, event_type, timestamp, step, node_rank in TrainingEvent.objects.filter(
                workload=workload, job_name__in=job_names
            ).values_list("job_name", "event_type", "timestamp", "step", "node_rank")
        }
        new_rows = [row for identity, row in rows_by_identity.items() if identity not in existing]
        run.status = TrainingImportRun.Status.SUCCEEDED
        run.events_accepted = len(new_rows)
        run.events_duplicate = len(parsed.rows) - len(new_rows)
        message = sentence(
            gettext_noop("%(accepted)s event(s) stored, %(duplicates)s already stored."),
            accepted=run.events_accepted,
            duplicates=run.events_duplicate,
        )
        run.message, run.message_parts = str(message), to_data(message)
        run.save()
        TrainingEvent.objects.bulk_create(
            [
                TrainingEvent(
                    workload=workload,
                    job_name=row.job_name,
                    event_type=row.event_type,
                    timestamp=row.timestamp,
                    step=row.step,
                    node_rank=row.node_rank,
                    duration_seconds=row.duration_seconds,
                    import_run=run,
                )
                for row in new_rows
            ],
            batch_size=5000,
        )
    return run


@dataclass
class GoodputFigures:
    """A workload's (or one job's) goodput with its hours, GPU-hours and dollars."""

    job_name: str
    measured: goodput.Goodput
    gpu_count: int
    # The pool's price in US dollars at the month's rate (apps/currencies/rates.py).
    price: UsdPrice

    @property
    def price_per_gpu_hour_usd(self) -> Decimal | None:
        return self.price.usd

    @property
    def missing_rate(self) -> tuple | None:
        return self.price.missing

    @property
    def total_seconds(self) -> float:
        return self.measured.total_seconds

    @property
    def total_hours(self) -> float:
        return self.measured.total_seconds / 3600

    @property
    def effective_seconds(self) -> float:
        return self.measured.effective_seconds

    @property
    def badput_total_seconds(self) -> float:
        return sum(self.measured.badput_seconds.values())

    def gpu_hours(self, seconds: float) -> float:
        return seconds / 3600 * self.gpu_count

    def usd(self, seconds: float) -> float | None:
        """None when the pool's exchange rate is missing: never its own currency as USD."""
        if self.price.usd is None:
            return None
        return self.gpu_hours(seconds) * float(self.price.usd)

    def as_data(self) -> dict:
        """The API's figures: seconds, hours, GPU-hours and USD of each category."""
        measured = self.measured

        def amounts(seconds):
            return {
                "seconds": round(seconds, 6),
                "hours": round(seconds / 3600, 6),
                "gpu_hours": round(self.gpu_hours(seconds), 6),
                "usd": _rounded(self.usd(seconds)),
            }

        pct = measured.goodput_pct
        return {
            "job_name": self.job_name,
            "total_seconds": round(measured.total_seconds, 6),
            "effective_seconds": round(measured.effective_seconds, 6),
            "goodput_pct": None if pct is None else round(pct, 4),
            "badput_seconds": {
                name: round(seconds, 6) for name, seconds in measured.badput_seconds.items()
            },
            "total": amounts(measured.total_seconds),
            "effective": amounts(measured.effective_seconds),
            "badput": {name: amounts(seconds) for name, seconds in measured.badput_seconds.items()},
            "gpu_hours": round(self.gpu_hours(measured.total_seconds), 6),
            "usd": _rounded(self.usd(measured.total_seconds)),
            "min_loaded_step": measured.min_loaded_step,
            "max_saved_step": measured.max_saved_step,
            "job_starts": measured.job_starts,
            "flags": list(measured.flags),
        }


@dataclass
class WorkloadGoodput:
    workload: Workload
    jobs: list[GoodputFigures]
    total: GoodputFigures
    event_count: int


def events_by_job(
    workload_ids, *, start: datetime | None = None, end: datetime | None = None
) -> dict[int, dict[str, list[goodput.Event]]]:
    """Workload id → job name → its events stamped in [start, end) (either open), in
    order: one query for any number of workloads."""
    events = TrainingEvent.objects.filter(workload_id__in=list(workload_ids))
    if start is not None:
        events = events.filter(timestamp__gte=start)
    if end is not None:
        events = events.filter(timestamp__lt=end)
    found: dict[int, dict[str, list[goodput.Event]]] = {}
    for workload_id, job_name, event_type, timestamp, step, node_rank, duration in events.order_by(
        "workload_id", "job_name", "timestamp", "pk"
    ).values_list(
        "workload_id",
        "job_name",
        "event_type",
        "timestamp",
        "step",
        "node_rank",
        "duration_seconds",
    ):
        found.setdefault(workload_id, {}).setdefault(job_name, []).append(
            goodput.Event(timestamp, event_type, step, node_rank, duration)
        )
    return found


ONE_SECOND = timedelta(seconds=1)


def _rounded(usd: float | None) -> float | None:
    return None if usd is None else round(usd, 4)


def _goodput_of(
    workload: Workload, by_job: dict[str, list[goodput.Event]], price: UsdPrice
) -> WorkloadGoodput:
    reference = workload.reference_step_seconds
    reference_seconds = None if reference is None else float(reference)
    jobs = [
        GoodputFigures(
            job_name,
            goodput.job_goodput(job_events, reference_step_seconds=reference_seconds),
            workload.gpu_count,
            price,
        )
        for job_name, job_events in by_job.items()
    ]
    total = GoodputFigures(
        "", goodput.combine(job.measured for job in jobs), workload.gpu_count, price
    )
    if not jobs and reference_seconds is None:
        total.measured.flags.append(goodput.NO_REFERENCE_STEP)
    count = sum(len(job_events) for job_events in by_job.values())
    return WorkloadGoodput(workload, jobs, total, count)


def workloads_goodput(
    workloads, *, start: datetime | None = None, end: datetime | None = None
) -> dict[int, WorkloadGoodput]:
    """``workload_goodput`` of each of ``workloads`` (with their pools loaded), from one
    query of their events."""
    workloads = list(workloads)
    events = events_by_job([workload.pk for workload in workloads], start=start, end=end)
    # Dollars at the rate of the range's last month (this month's for an open range): one
    # read of the rates for every workload.
    moment = timezone.now() if end is None else min(end - ONE_SECOND, timezone.now())
    rates = usd_rates_at({workload.pool.currency for workload in workloads}, moment)
    return {
        workload.pk: _goodput_of(
            workload, events.get(workload.pk, {}), usd_price(workload.pool, moment, rates)
        )
        for workload in workloads
    }


def workload_goodput(
    workload: Workload, *, start: datetime | None = None, end: datetime | None = None
) -> WorkloadGoodput:
    """Goodput of each job of ``workload`` and of all of them, from the events stamped
    in [start, end) (either open); GPU-hours at the workload's GPUs, dollars at its pool's
    effective price per GPU-hour, converted to US dollars at the rate of the range's last
    month (none, naming the missing rate, when that rate is missing)."""
    return workloads_goodput([workload], start=start, end=end)[workload.pk]
