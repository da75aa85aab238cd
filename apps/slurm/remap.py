"""Re-mapping the stored jobs after a change of the mapping rules, as a background job
(``SlurmRemap``, the lifecycle of apps/core/jobs.py): one code path, ``run_remap``, runs
it inline in the request that changed a rule when the stored jobs are at most
``SLURM_REMAP_INLINE_MAX_JOBS``, else on a worker while the rules page shows its progress.

A re-map reads the rules when it starts, so a change saved while one waits for a worker
joins it rather than queueing another. A re-map is one transaction (``remap_jobs``) and
maps every job by the rules as they are then: a rerun after a worker died writes the same
mapping, never a half of one."""

from django.conf import settings
from django.db import transaction

from apps.core import runs
from apps.core.outbox import enqueue
from apps.core.sentences import gettext_noop, sentence
from apps.slurm.mapping import remap_jobs
from apps.slurm.models import SlurmJob, SlurmRemap

REMAP_TASK = "slurm.remap_jobs"


def request_remap(*, user=None, inline: bool | None = None) -> SlurmRemap:
    """A re-map of the stored jobs, in the caller's transaction (the rule's change): run
    now when ``inline`` (None: when the jobs are at most SLURM_REMAP_INLINE_MAX_JOBS),
    else queued for a worker after the commit. A re-map already waiting for a worker is
    returned instead of a new one, as it reads the rules once the change is committed
    (run now when ``inline`` is True)."""
    with transaction.atomic():
        # Locked, so a worker cannot claim it (and read the rules) before this commits.
        waiting = (
            SlurmRemap.objects.select_for_update()
            .filter(status=SlurmRemap.Status.QUEUED)
            .order_by("pk")
            .first()
        )
        if waiting is not None:
            if inline:  # the caller answers after the re-map: the worker's task finds it done
                run_remap(waiting.pk)
                waiting.refresh_from_db()
            return waiting
        if inline is None:
            inline = SlurmJob.objects.count() <= settings.SLURM_REMAP_INLINE_MAX_JOBS
        remap = SlurmRemap.objects.create(
            requested_by=user if user is not None and user.is_authenticated else None
        )
        if inline:
            run_remap(remap.pk)
            remap.refresh_from_db()
        else:
            enqueue(REMAP_TASK, remap.pk)
    return remap


def run_remap(remap_id: int) -> int:
    """Map every stored job again by the rules as they are now, as re-map ``remap_id``;
    returns how many jobs changed workload or team. A re-map finished, running elsewhere
    or out of attempts is left alone (0)."""
    claimed = runs.claim(
        SlurmRemap,
        remap_id,
        startable=(SlurmRemap.Status.QUEUED, SlurmRemap.Status.INTERRUPTED),
        progress_pct=0,
        jobs_total=0,
        jobs_changed=0,
        message="",
    )
    if not claimed:
        return 0
    remap = SlurmRemap.objects.get(pk=remap_id)
    with remap.running() as beat:
        remap.jobs_total = SlurmJob.objects.count()
        remap.jobs_changed = remap_jobs(progress=beat.progress)
    remap.succeed(
        sentence(
            gettext_noop("%(changed)s of %(total)s jobs changed workload or team."),
            changed=f"{remap.jobs_changed:,}",
            total=f"{remap.jobs_total:,}",
        ),
        also_save=["jobs_total", "jobs_changed"],
    )
    return remap.jobs_changed


def latest_remap() -> SlurmRemap | None:
    return SlurmRemap.objects.select_related("requested_by").order_by("-created_at", "-pk").first()


def reap_stalled_remaps() -> int:
    """Mark re-maps whose worker stopped interrupted and queue them again (a re-map is one
    transaction: the stopped one wrote nothing). Returns the re-maps marked."""
    return runs.reap(
        SlurmRemap.objects.all(),
        describe=lambda remap: (gettext_noop("The worker"), gettext_noop("re-mapping Slurm jobs")),
        retry=lambda remap: enqueue(REMAP_TASK, remap.pk),
        advice=lambda remap: gettext_noop("re-map the jobs again from the rules page."),
    )
