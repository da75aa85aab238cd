"""Pulling a cluster's Slurm accounting: run ``sacct`` for the window since the last
successful pull and import its text (apps/slurm/services.py, idempotent by cluster and job
id), recording each run (``SlurmPull``).

The window starts ``SLURM_PULL_OVERLAP_MINUTES`` before the last successful pull's end
(the first pull: ``SLURM_PULL_FIRST_DAYS`` back) and ends now. ``sacct --starttime``
selects every job that ran during the window, so a job still running at the last pull is
printed again, with its end, and completed by the import; the overlap covers the clocks of
the login node and of this machine disagreeing a little.

``sacct`` is ``SLURM_SACCT`` (a path or a name on ``PATH``; ``--sacct`` for the command),
run with this process's environment, ``SLURM_CONF`` set from the setting of that name when
it is given. Its times are the cluster's local time (``Cluster.timezone``)."""

import os
import shlex
import subprocess
from datetime import datetime, timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import IntegrityError
from django.db.models import Max
from django.utils import timezone

from apps.core.sentences import Sentence, gettext_noop, to_data
from apps.slurm.models import SlurmImport, SlurmPull
from apps.slurm.services import import_sacct

# What the importer reads (apps/slurm/sacct.py); JobIDRaw, ElapsedRaw and the two TRES
# usage and comment columns are kept with the job.
SACCT_FIELDS = (
    "JobID,JobIDRaw,User,Account,Partition,QOS,JobName,State,Start,End,Elapsed,ElapsedRaw,"
    "NNodes,NodeList,AllocTRES,ReqTRES,TRESUsageInTot,AdminComment"
)
# The last lines of sacct's standard error that a failed pull keeps.
STDERR_CHARS = 2000


def sacct_arguments(sacct: str, since_local: datetime) -> list[str]:
    """The command line of a pull from ``since_local`` (the cluster's local time) to now."""
    return [
        sacct,
        "--parsable2",
        "--allusers",
        f"--starttime={since_local:%Y-%m-%dT%H:%M:%S}",
        "--endtime=now",
        f"--format={SACCT_FIELDS}",
    ]


def sacct_environment() -> dict[str, str]:
    environment = dict(os.environ)
    conf = getattr(settings, "SLURM_CONF", "")
    if conf:
        environment["SLURM_CONF"] = conf
    # sacct's own SACCT_FORMAT or a time format would change what it prints.
    environment["SLURM_TIME_FORMAT"] = "standard"
    for name in list(environment):
        if name.startswith("SACCT_"):
            del environment[name]
    return environment


def pull_window_start(cluster, now: datetime) -> datetime:
    last = (
        SlurmPull.objects.filter(cluster=cluster, status=SlurmPull.Status.SUCCEEDED)
        .order_by("-until")
        .values_list("until", flat=True)
        .first()
    )
    if last is None:
        return now - timedelta(days=settings.SLURM_PULL_FIRST_DAYS)
    return last - timedelta(minutes=settings.SLURM_PULL_OVERLAP_MINUTES)


def _fail(pull: SlurmPull, message: Sentence, **fields) -> SlurmPull:
    pull.status = SlurmPull.Status.FAILED
    pull.error = str(message)
    pull.error_parts = to_data(message)
    pull.finished_at = timezone.now()
    for name, value in fields.items():
        setattr(pull, name, value)
    pull.save()
    return pull


def pull_cluster(
    cluster, *, sacct: str | None = None, since: datetime | None = None, now=None
) -> SlurmPull:
    """Run sacct for ``cluster`` and import what it prints; the recorded pull says how it
    went (never raises for sacct's failures)."""
    now = now or timezone.now()
    sacct = sacct or settings.SLURM_SACCT
    since = since or pull_window_start(cluster, now)
    arguments = sacct_arguments(sacct, since.astimezone(cluster.zone))
    pull = SlurmPull.objects.create(
        cluster=cluster,
        started_at=now,
        since=since,
        until=now,
        command=shlex.join(arguments),
    )
    if cluster.archived_at is not None:
        return _fail(
            pull,
            Sentence(
                gettext_noop("The cluster %(cluster)s is archived: restore it to pull its jobs."),
                cluster=cluster.name,
            ),
        )
    try:
        completed = subprocess.run(  # noqa: S603 - sacct from settings or the command line
            arguments,
            capture_output=True,
            text=True,
            timeout=settings.SLURM_SACCT_TIMEOUT_SECONDS,
            env=sacct_environment(),
            check=False,
        )
    except FileNotFoundError:
        return _fail(
            pull,
            Sentence(
                gettext_noop(
                    "sacct was not found at “%(sacct)s”: install Slurm's client tools on the "
                    "workers' machine, or set SLURM_SACCT (or --sacct) to sacct's path."
                ),
                sacct=sacct,
            ),
        )
    except OSError as error:
        return _fail(
            pull,
            Sentence(
                gettext_noop(
                    "“%(sacct)s” cannot be run (%(reason)s): make it an executable the "
                    "workers' user may run, or set SLURM_SACCT to sacct's path."
                ),
                sacct=sacct,
                reason=error.strerror or type(error).__name__,
            ),
        )
    except subprocess.TimeoutExpired:
        return _fail(
            pull,
            Sentence(
                gettext_noop(
                    "sacct did not answer within %(seconds)s s: check that slurmdbd is up, "
                    "or raise SLURM_SACCT_TIMEOUT_SECONDS."
                ),
                seconds=settings.SLURM_SACCT_TIMEOUT_SECONDS,
            ),
        )
    stderr = completed.stderr.strip()[-STDERR_CHARS:]
    if completed.returncode != 0:
        return _fail(
            pull,
            Sentence(
                gettext_noop(
                    "sacct ended with exit code %(code)s: %(stderr)s. Check that slurmdbd "
                    "answers from this machine and that SLURM_CONF names the cluster's "
                    "slurm.conf."
                ),
                code=completed.returncode,
                stderr=stderr or "(nothing on standard error)",
            ),
            exit_code=completed.returncode,
            stderr=stderr,
        )
    try:
        result = import_sacct(
            cluster, completed.stdout, source=SlurmImport.Source.PULL, file_name="sacct", now=now
        )
    except IntegrityError:
        # Another pull of the cluster stored the same jobs meanwhile; the import is one
        # transaction, so nothing of this one was kept.
        return _fail(
            pull,
            Sentence(
                gettext_noop(
                    "Another pull of this cluster imported the same jobs at the same time; "
                    "nothing of this one was kept, and the next pull asks again."
                )
            ),
            exit_code=0,
            stderr=stderr,
        )
    except SoftTimeLimitExceeded:
        # The import is one transaction: nothing of it was kept.
        return _fail(
            pull,
            Sentence(
                gettext_noop(
                    "Importing sacct's answer ran past the task's time limit and was undone: "
                    "lower SLURM_PULL_FIRST_DAYS for a first pull, or import the file with "
                    "manage.py import_slurm."
                )
            ),
            exit_code=0,
            stderr=stderr,
        )
    pull.exit_code, pull.stderr, pull.slurm_import = 0, stderr, result.record
    if result.nothing_read:
        first = result.errors[0]
        return _fail(
            pull,
            Sentence(
                gettext_noop(
                    "sacct answered, but none of its %(count)s refused lines could be read; "
                    "the first: %(error)s"
                ),
                count=len(result.errors),
                error=str(first.message),
            ),
        )
    pull.status = SlurmPull.Status.SUCCEEDED
    pull.finished_at = timezone.now()
    pull.save()
    return pull


def due_clusters(now: datetime) -> list:
    """The clusters that pull whose last pull started an interval or more ago (or never)."""
    from apps.clusters.models import Cluster

    clusters = Cluster.objects.filter(slurm_pull_enabled=True, archived_at__isnull=True)
    return [
        cluster
        for cluster in clusters.annotate(last_started=Max("slurm_pulls__started_at"))
        if cluster.last_started is None
        or now - cluster.last_started >= timedelta(minutes=cluster.slurm_pull_interval_minutes)
    ]
