"""Which workload and team a Slurm job's GPUs count for: the first mapping rule, by
priority, whose pattern matches the job's account, partition, QOS, user or job name
(``SlurmMappingRule.matches``). A rule that names only a workload gives the workload's
team (its own, else its pool's); one that names only a team gives no workload.

Imports map the jobs they write (apps/slurm/services.py); a change of the rules re-maps
every stored job in one transaction (``remap_jobs``)."""

from django.db import transaction
from django.db.models import Q

from apps.pools.querysets import workload_scope_filter
from apps.slurm.interruptions import sync_interruptions
from apps.slurm.models import SlurmJob, SlurmMappingRule
from apps.slurm.signals import jobs_changed_on_commit

# Jobs read and written per round of a re-map.
REMAP_BATCH = 2000


def rules_in(scope):
    """The rules a user of ``scope`` sees: those naming no workload or team outside it
    (another team's workload or team is not shown, as everywhere)."""
    rules = SlurmMappingRule.objects.all()
    if scope.everything:
        return rules
    return rules.filter(
        Q(workload__isnull=True) | workload_scope_filter(scope, "workload__")
    ).filter(scope.team_filter("team"))


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


def remap_jobs() -> int:
    """Map every stored job again by the rules as they are now, in one transaction;
    returns how many jobs changed workload or team. Their interruptions follow."""
    rules = mapping_rules()
    changed_count = 0
    with transaction.atomic():
        # The rules as read stay the rules of the whole re-map.
        list(SlurmMappingRule.objects.select_for_update().values_list("pk", flat=True))
        last_pk = 0
        while True:
            batch = list(
                SlurmJob.objects.filter(pk__gt=last_pk)
                .select_for_update()
                .order_by("pk")[:REMAP_BATCH]
            )
            if not batch:
                break
            last_pk = batch[-1].pk
            changed = [job for job in batch if apply_mapping(job, rules)]
            if changed:
                SlurmJob.objects.bulk_update(changed, ["workload", "team"])
                sync_interruptions(changed)
                changed_count += len(changed)
        if changed_count:
            jobs_changed_on_commit()
    return changed_count


def unmapped_jobs(queryset=None):
    """The jobs no rule maps to a workload (a team-only rule leaves the workload empty)."""
    return (SlurmJob.objects.all() if queryset is None else queryset).filter(workload__isnull=True)
