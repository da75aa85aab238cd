"""Which workload and team a Slurm job's GPUs count for: the first mapping rule, by
priority, whose pattern matches the job's account, partition, QOS, user or job name
(``SlurmMappingRule.matches``). A rule that names only a workload gives the workload's
team (its own, else its pool's); one that names only a team gives no workload.

Imports map the jobs they write (apps/slurm/services.py); a change of the rules re-maps
every stored job in one transaction (``remap_jobs``), as a re-map job (apps/slurm/remap.py)."""

from collections import defaultdict
from collections.abc import Callable
from types import SimpleNamespace

from django.db import transaction
from django.db.models import Q

from apps.pools.querysets import workload_scope_filter
from apps.slurm.interruptions import INTERRUPTING_STATES, sync_interruptions
from apps.slurm.models import SlurmJob, SlurmMappingRule
from apps.slurm.signals import jobs_changed_on_commit

# Jobs read, and ids written, per round of a re-map.
REMAP_BATCH = 2000
# What a re-map reads of a job: the fields rules match, and whether it may be interrupted.
REMAP_FIELDS = (
    "cluster_id",
    "account",
    "partition",
    "qos",
    "user",
    "job_name",
    "state",
    "workload_id",
    "team_id",
    "interruption_id",
)


def rules_in(scope):
    """The rules a user of ``scope`` sees: those naming no workload or team outside it
    (another team's workload or team is not shown, as everywhere)."""
    rules = SlurmMappingRule.objects.all()
    if scope.everything:
        return rules
    return rules.filter(
        Q(workload__isnull=True) | workload_scope_filter(scope, "workload__")
    ).filter(scope.team_filter("team"))


def shown_mapping(job, scope) -> tuple[bool, bool]:
    """(the job's workload may be named, its team may be named) to a reader of ``scope``:
    another team's workload or team is not named (the page says "Another team's
    workload", the API gives null), while the job itself, its GPU-hours and whether a rule
    maps it stay visible, as every reader reads every cluster's jobs. ``job.workload``
    must come with its pool (a workload without a team is its pool's team's)."""
    workload_shown = job.workload_id is not None and scope.covers_team(
        job.workload.effective_team_id
    )
    team_shown = job.team_id is not None and scope.covers_team(job.team_id)
    return workload_shown, team_shown


def mapping_rules() -> list[SlurmMappingRule]:
    return list(
        SlurmMappingRule.objects.select_related("workload__pool", "team").order_by("priority", "id")
    )


def mapping_of(job, rules) -> tuple[int | None, int | None]:
    """(workload id, team id) of the first rule matching ``job``; (None, None) when none."""
    for rule in rules:
        if rule.matches(job):
            team_id = rule.team_id
            if team_id is None and rule.workload_id is not None:
                team_id = rule.workload.effective_team_id
            return rule.workload_id, team_id
    return None, None


def apply_mapping(job, rules) -> bool:
    """Set ``job``'s workload and team by ``rules``; True when they changed."""
    workload_id, team_id = mapping_of(job, rules)
    if (job.workload_id, job.team_id) == (workload_id, team_id):
        return False
    job.workload_id, job.team_id = workload_id, team_id
    return True


# The share of a re-map's progress its reading of the jobs stands for; the writes the rest.
READ_SHARE_PCT = 80


def remap_jobs(progress: Callable[[int], None] | None = None, *, cluster=None) -> int:
    """Map every stored job (of ``cluster`` only, when given) again by the rules as they
    are now, in one transaction; returns how many jobs changed workload or team. Their
    interruptions follow. ``progress(percent)`` hears how far it got after each batch of
    jobs read."""
    rules = mapping_rules()
    # (workload id, team id) → the ids of the jobs that now map to it: one UPDATE per
    # target, not one per job.
    moved: dict[tuple, list[int]] = defaultdict(list)
    interrupted = []
    with transaction.atomic():
        # The rules as read stay the rules of the whole re-map.
        list(SlurmMappingRule.objects.select_for_update().values_list("pk", flat=True))
        jobs = (
            SlurmJob.objects.all() if cluster is None else SlurmJob.objects.filter(cluster=cluster)
        )
        total = jobs.count() if progress is not None else 0
        # Plain rows, not model instances: a re-map reads every job.
        rows = (
            jobs.select_for_update()
            .order_by("pk")
            .values_list("pk", *REMAP_FIELDS)
            .iterator(chunk_size=REMAP_BATCH)
        )
        for seen, (pk, *values) in enumerate(rows, start=1):
            if progress is not None and seen % REMAP_BATCH == 0:
                progress(READ_SHARE_PCT * seen // max(total, 1))
            job = SimpleNamespace(**dict(zip(REMAP_FIELDS, values, strict=True)))
            if not apply_mapping(job, rules):
                continue
            moved[(job.workload_id, job.team_id)].append(pk)
            if job.state in INTERRUPTING_STATES or job.interruption_id:
                interrupted.append(pk)
        if progress is not None:
            progress(READ_SHARE_PCT)
        for (workload_id, team_id), ids in moved.items():
            for start in range(0, len(ids), REMAP_BATCH):
                SlurmJob.objects.filter(pk__in=ids[start : start + REMAP_BATCH]).update(
                    workload_id=workload_id, team_id=team_id
                )
        sync_interruptions(
            SlurmJob.objects.filter(pk__in=interrupted).select_related(
                "workload", "cluster", "interruption"
            )
        )
        changed_count = sum(len(ids) for ids in moved.values())
        if changed_count:
            jobs_changed_on_commit()
    return changed_count
