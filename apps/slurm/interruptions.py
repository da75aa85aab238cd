"""Slurm jobs that ended because the cluster stopped them (a node failed or did not boot,
the job was preempted or requeued) are interruptions of their workload's training, for
the goodput ledger and effective training GPU-hours, which read ``Interruption``.

Each job has at most one interruption (``SlurmJob.interruption``): an import of the same
job again, or a re-map, updates it; a job that no longer qualifies (its state or its
workload changed) has it removed.

The work lost is counted from the latest checkpoint the workload's training events saved
during the job, else from the job's start: ``last_checkpoint_at``, with no restart time
(the next job's own wait is its own), on the job's own GPUs (``Interruption.gpus``): a
workload spread over several jobs loses only the stopped job's share, and a job that held
no GPU lost no GPU work, so it is no interruption. A row without a start (Slurm 22.05 prints
``Start=None`` and 0 s for the REQUEUED record of a job requeued before its run was
accounted) counts no lost time: sacct does not say how long it ran."""

from django.db import transaction
from django.utils.translation import gettext

from apps.pools.choices import InterruptionCause
from apps.pools.models import Interruption
from apps.training.models import EventType, TrainingEvent

INTERRUPTING_STATES = {
    "NODE_FAIL": InterruptionCause.HARDWARE,
    "BOOT_FAIL": InterruptionCause.HARDWARE,
    "PREEMPTED": InterruptionCause.PREEMPTION,
    "REQUEUED": InterruptionCause.PREEMPTION,
}


def is_interruption(job) -> bool:
    return (
        job.state in INTERRUPTING_STATES
        and job.end is not None
        and job.gpus > 0
        and job.workload_id is not None
        and job.workload.is_training
    )


def last_checkpoint(job):
    """When the workload last saved a checkpoint during the job, else the job's start."""
    if job.start is None:
        return None
    saved = (
        TrainingEvent.objects.filter(
            workload_id=job.workload_id,
            event_type=EventType.CHECKPOINT_SAVED,
            timestamp__gte=job.start,
            timestamp__lte=job.end,
        )
        .order_by("-timestamp")
        .values_list("timestamp", flat=True)
        .first()
    )
    return saved or job.start


def _notes(job) -> str:
    text = gettext("Slurm job %(job)s on %(cluster)s ended %(state)s.") % {
        "job": job.job_id,
        "cluster": job.cluster,
        "state": job.state,
    }
    if job.start is None:
        text += " " + gettext("sacct gives no start: no lost time is counted.")
    return text


def sync_interruptions(jobs) -> int:
    """Create, update or remove the interruptions of ``jobs`` (stored jobs), in one
    transaction; returns how many interruptions now stand for them."""
    jobs = [job for job in jobs if job.pk is not None]
    standing = 0
    relinked = []
    with transaction.atomic():
        for job in jobs:
            current = job.interruption if job.interruption_id else None
            if not is_interruption(job):
                if current is not None:
                    job.interruption = None
                    relinked.append(job)
                    current.delete()
                continue
            checkpoint = last_checkpoint(job)
            values = {
                "workload_id": job.workload_id,
                "occurred_at": job.end,
                "cause": INTERRUPTING_STATES[job.state],
                "restart_minutes": 0,
                # No start: the failure's own time, so nothing is counted as lost.
                "last_checkpoint_at": checkpoint if checkpoint is not None else job.end,
                "gpus": job.gpus,
                "notes": _notes(job),
            }
            if current is None:
                job.interruption = Interruption.objects.create(**values)
                relinked.append(job)
            elif any(getattr(current, name) != value for name, value in values.items()):
                for name, value in values.items():
                    setattr(current, name, value)
                current.save()
            standing += 1
        if relinked:
            type(relinked[0]).objects.bulk_update(relinked, ["interruption"])
    return standing
