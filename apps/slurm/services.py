"""Imports of ``sacct --parsable2`` text into a cluster's jobs, idempotent by (cluster, job
id): a row already stored as it is now is a duplicate; a row that changed (a running job
that has ended, a pending one that started) updates its job; the rest are added. Steps add
nothing. One transaction: the import's accepted and updated rows are all written, or none."""

from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

from django.db import transaction
from django.utils import timezone

from apps.core.sentences import Sentence, gettext_noop, to_data
from apps.slurm.interruptions import sync_interruptions
from apps.slurm.mapping import apply_mapping, mapping_rules
from apps.slurm.models import GPU_HOURS_PLACES, SlurmImport, SlurmJob
from apps.slurm.sacct import LineError, SacctRow, parse_sacct
from apps.slurm.signals import jobs_changed_on_commit

SECONDS_PER_HOUR = Decimal(3600)
GPU_HOURS_QUANTUM = Decimal(1).scaleb(-GPU_HOURS_PLACES)

# The model's fields a row sets (the rest: cluster, import bookkeeping).
JOB_FIELDS = (
    "job_id_raw",
    "user",
    "account",
    "partition",
    "qos",
    "job_name",
    "state",
    "state_raw",
    "start",
    "end",
    "elapsed_seconds",
    "gpus",
    "gpu_type",
    "gpu_hours",
    "nodes",
    "node_list",
    "node_names",
    "alloc_tres",
    "req_tres",
    "billing",
    "tres_usage_in_tot",
    "admin_comment",
    "fields",
)


def gpu_hours(gpus: int, elapsed_seconds: Decimal) -> Decimal:
    """GPUs × elapsed seconds ÷ 3600, rounded half up once to the stored places."""
    return (Decimal(gpus) * elapsed_seconds / SECONDS_PER_HOUR).quantize(
        GPU_HOURS_QUANTUM, rounding=ROUND_HALF_UP
    )


def running_elapsed(start: datetime | None, now: datetime) -> Decimal:
    """A running job's seconds from its start to ``now`` (none before it starts)."""
    if start is None or now <= start:
        return Decimal(0)
    return Decimal(int((now - start).total_seconds()))


@dataclass
class ImportResult:
    accepted: int = 0
    duplicates: int = 0
    updated: int = 0
    rejected: int = 0
    steps: int = 0
    errors: list[LineError] = field(default_factory=list)
    record: SlurmImport | None = None

    @property
    def nothing_read(self) -> bool:
        """Lines were refused and none was read as a job: the text is not what sacct
        prints (step rows alone say nothing of a job's GPUs)."""
        return bool(self.errors) and not (self.accepted + self.updated + self.duplicates)

    def error_data(self) -> list[dict]:
        return [{"line": error.line, "message": str(error.message)} for error in self.errors]


def _aware(naive: datetime | None, zone) -> datetime | None:
    # An hour repeated when clocks go back reads as its first occurrence (fold 0).
    return None if naive is None else naive.replace(tzinfo=zone)


def job_values(row: SacctRow, zone, now: datetime) -> dict:
    """The stored values of a job row, its times in ``zone``; a running job (started, no
    end) is counted to ``now``."""
    start, end = _aware(row.start, zone), _aware(row.end, zone)
    elapsed = row.elapsed_seconds
    if start is not None and end is None:
        elapsed = running_elapsed(start, now)
    return {
        "job_id_raw": row.job_id_raw,
        "user": row.user,
        "account": row.account,
        "partition": row.partition,
        "qos": row.qos,
        "job_name": row.job_name,
        "state": row.state,
        "state_raw": row.state_raw,
        "start": start,
        "end": end,
        "elapsed_seconds": elapsed,
        "gpus": row.gpus,
        "gpu_type": row.gpu_type,
        "gpu_hours": gpu_hours(row.gpus, elapsed),
        "nodes": row.nodes,
        "node_list": row.node_list,
        "node_names": row.node_names,
        "alloc_tres": row.alloc_tres,
        "req_tres": row.req_tres,
        "billing": row.billing,
        "tres_usage_in_tot": row.tres_usage_in_tot,
        "admin_comment": row.admin_comment,
        "fields": row.fields,
    }


def import_sacct(
    cluster,
    text: str,
    *,
    user=None,
    source: str = SlurmImport.Source.API,
    file_name: str = "",
    now: datetime | None = None,
) -> ImportResult:
    """Read ``text`` into ``cluster``'s jobs and record the import (returned with it)."""
    now = now or timezone.now()
    parsed = parse_sacct(text)
    result = ImportResult(errors=list(parsed.errors), steps=len(parsed.steps))
    rows: dict[str, SacctRow] = {}
    for row in parsed.jobs:
        if row.job_id in rows:
            result.errors.append(
                LineError(
                    row.line,
                    Sentence(
                        gettext_noop(
                            "line %(line)s: job %(job)s is already on line %(first)s (sacct "
                            "--duplicates output is not read: run sacct without -D)"
                        ),
                        line=row.line,
                        job=row.job_id,
                        first=rows[row.job_id].line,
                    ),
                )
            )
            continue
        rows[row.job_id] = row
    result.errors.sort(key=lambda error: error.line)
    result.rejected = len(result.errors)
    zone = cluster.zone
    with transaction.atomic():
        record = SlurmImport.objects.create(
            cluster=cluster,
            imported_by=user if user is not None and user.is_authenticated else None,
            imported_at=now,
            source=source,
            file_name=file_name[:255],
        )
        stored = {
            job.job_id: job
            for job in SlurmJob.objects.select_for_update().filter(
                cluster=cluster, job_id__in=list(rows)
            )
        }
        rules = mapping_rules()
        new, changed = [], []
        for job_id, row in rows.items():
            job = stored.get(job_id)
            if job is not None and job.fields == row.fields:
                result.duplicates += 1
                continue
            values = job_values(row, zone, now)
            if job is None:
                new.append(
                    SlurmJob(
                        cluster=cluster,
                        job_id=job_id,
                        first_imported_at=now,
                        last_import=record,
                        **values,
                    )
                )
            else:
                for name, value in values.items():
                    setattr(job, name, value)
                job.last_import = record
                changed.append(job)
        for job in (*new, *changed):
            apply_mapping(job, rules)
        SlurmJob.objects.bulk_create(new, batch_size=1000)
        if changed:
            SlurmJob.objects.bulk_update(
                changed, [*JOB_FIELDS, "workload", "team", "last_import"], batch_size=1000
            )
        sync_interruptions([*new, *changed])
        if new or changed:
            jobs_changed_on_commit()
        result.accepted, result.updated = len(new), len(changed)
        record.accepted, record.updated = result.accepted, result.updated
        record.duplicates, record.rejected = result.duplicates, result.rejected
        record.steps = result.steps
        record.errors = [
            {"line": error.line, "message": str(error.message), "parts": to_data(error.message)}
            for error in result.errors
        ]
        record.save()
    result.record = record
    return result
