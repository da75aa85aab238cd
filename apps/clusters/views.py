from django.contrib import messages
from django.db.models import Count, Sum
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_GET

from apps.accounts.scope import scope_of
from apps.clusters.forms import ClusterForm
from apps.clusters.models import Cluster
from apps.core.crud import ObjectViews
from apps.core.history import history_rows
from apps.core.htmx import render_page


class ClusterViews(ObjectViews):
    model = Cluster
    noun = gettext_lazy("Cluster")
    form = ClusterForm
    template = "clusters/cluster_form.html"
    list_url = "clusters:cluster_list"
    pretitle = gettext_lazy("Clusters")
    archived_message = gettext_lazy("Cluster %(name)s archived: hidden from lists, its jobs kept.")
    restored_message = gettext_lazy("Cluster %(name)s restored.")

    def form_context(self, request, obj, parent):
        cancel_url = obj.get_absolute_url() if obj is not None else reverse(self.list_url)
        return {"cancel_url": cancel_url}

    def archive_response(self, request, cluster, archived: bool):
        if archived and cluster.is_default:
            messages.error(request, default_cluster_stays())
            return redirect(cluster)
        return super().archive_response(request, cluster, archived)

    def delete_options(self, request, cluster):
        if cluster.is_default:
            return {"refusal": default_cluster_stays()}
        # Pools and pull sources hold the cluster (PROTECT): they move or go first. Slurm
        # jobs are its history: a cluster with any is archived, never deleted.
        blocking = [
            *cluster.pools.order_by("name"),
            *cluster.pull_sources.order_by("name"),
        ]
        return {
            "blocking": blocking,
            "blocking_label": gettext("pools and pull sources"),
            "usage_history": usage_history(cluster),
            "archive_url": reverse("clusters:cluster_archive", kwargs={"slug": cluster.slug}),
        }


def default_cluster_stays() -> str:
    return gettext(
        "The default cluster stays: new pools and pull sources join it when no cluster is named."
    )


def usage_history(cluster) -> list[tuple[str, int]]:
    counts = [
        (gettext("Slurm jobs"), cluster.slurm_jobs.count()),
        (gettext("Slurm imports"), cluster.slurm_imports.count()),
        (gettext("Slurm pulls"), cluster.slurm_pulls.count()),
        (gettext("Slurm mapping rules"), cluster.slurm_rules.count()),
    ]
    return [(label, count) for label, count in counts if count]


cluster_views = ClusterViews()
cluster_create = cluster_views.create_view()
cluster_edit = cluster_views.edit_view()
cluster_delete = cluster_views.delete_view()
cluster_archive = cluster_views.archive_view(archived=True)
cluster_restore = cluster_views.archive_view(archived=False)


@require_GET
def cluster_list(request):
    show_archived = request.GET.get("archived") == "1"
    clusters = Cluster.objects.annotate(
        pool_count=Count("pools", distinct=True),
        source_count=Count("pull_sources", distinct=True),
    ).order_by("name")
    if not show_archived:
        clusters = clusters.filter(archived_at__isnull=True)
    clusters = list(clusters)
    # Counted apart: a join with the pools would multiply the jobs.
    jobs = _job_totals(clusters)
    for cluster in clusters:
        cluster.job_count, cluster.gpu_hours = jobs.get(cluster.pk, (0, None))
    return render_page(
        request,
        "clusters/cluster_list.html",
        {"clusters": clusters, "show_archived": show_archived},
    )


def _job_totals(clusters) -> dict:
    rows = (
        Cluster.objects.filter(pk__in=[cluster.pk for cluster in clusters])
        .annotate(job_count=Count("slurm_jobs"), gpu_hours=Sum("slurm_jobs__gpu_hours"))
        .values_list("pk", "job_count", "gpu_hours")
    )
    return {pk: (count, hours) for pk, count, hours in rows}


@cluster_views.object_view()
@require_GET
def cluster_detail(request, cluster):
    pools = cluster.pools.in_scope(scope_of(request.user)).select_related("gpu_model")
    totals = cluster.slurm_jobs.aggregate(job_count=Count("pk"), gpu_hours=Sum("gpu_hours"))
    context = {
        "cluster": cluster,
        "pools": pools.order_by("name"),
        "pull_sources": cluster.pull_sources.order_by("name"),
        "imports": cluster.slurm_imports.select_related("imported_by")[:10],
        "last_pull": cluster.slurm_pulls.select_related("slurm_import").first(),
        "job_count": totals["job_count"],
        "gpu_hours": totals["gpu_hours"],
        "history": history_rows(cluster),
    }
    return render_page(request, "clusters/cluster_detail.html", context)
