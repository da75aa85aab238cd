"""Which pools a Slurm job's GPUs were in: each node of its expanded node list joins a
pool through the telemetry hostname rules, as a new GPU of that hostname would
(``match_hostname_rule``), among the rules of its cluster's pools."""

from collections import defaultdict
from decimal import Decimal

from apps.telemetry.ingest.device_registry import match_hostname_rule
from apps.telemetry.models import HostnameRule


def hostname_rules_by_cluster() -> dict[int, list[HostnameRule]]:
    """Cluster id → the hostname rules of its pools, in priority order."""
    rules = defaultdict(list)
    for rule in HostnameRule.objects.select_related("pool").order_by("priority", "id"):
        rules[rule.pool.cluster_id].append(rule)
    return rules


def job_pool_gpus(job, rules_by_cluster) -> tuple[dict[int, Decimal], Decimal]:
    """(pool id → the job's GPUs in it, GPUs on nodes no rule places). A job's GPUs are
    spread evenly over its nodes: sacct gives the job's total, not each node's."""
    names = list(job.node_names)
    if not names or not job.gpus:
        return {}, Decimal(job.gpus or 0)
    per_node = Decimal(job.gpus) / len(names)
    rules = rules_by_cluster.get(job.cluster_id, [])
    pools: dict[int, Decimal] = defaultdict(Decimal)
    unplaced = Decimal(0)
    for name in names:
        pool = match_hostname_rule(name, rules)
        if pool is None:
            unplaced += per_node
        else:
            pools[pool.pk] += per_node
    return dict(pools), unplaced
