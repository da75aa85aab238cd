from celery import shared_task
from django.utils import timezone

from apps.clusters.models import Cluster


@shared_task(
    name="slurm.pull_cluster", ignore_result=True, time_limit=15 * 60, soft_time_limit=14 * 60
)
def pull_cluster_task(cluster_id: int) -> str:
    from apps.slurm.pull import pull_cluster

    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return "gone"
    return pull_cluster(cluster).status


@shared_task(name="slurm.pull_due_clusters", ignore_result=True, time_limit=60, soft_time_limit=50)
def pull_due_clusters_task() -> int:
    from apps.slurm.pull import due_clusters

    due = due_clusters(timezone.now())
    for cluster in due:
        pull_cluster_task.delay(cluster.pk)
    return len(due)


@shared_task(
    name="slurm.remap_jobs",
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=60 * 60,
    soft_time_limit=58 * 60,
    ignore_result=True,
)
def remap_jobs_task(remap_id: int) -> int:
    """Re-map the stored jobs after a change of the rules (apps/slurm/remap.py).
    Idempotent: one transaction maps every job by the rules as they are, so a redelivered
    task writes the same mapping again (its claim lets one attempt run at a time)."""
    from apps.slurm.remap import run_remap

    return run_remap(remap_id)
