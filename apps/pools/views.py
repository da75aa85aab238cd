from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.paginator import Paginator
from django.db.models import ProtectedError
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_http_methods

from apps.core.htmx import render_page
from apps.pools.forms import PoolForm, WorkloadForm
from apps.pools.models import Deployment, Pool, Purpose, Workload

PAGE_SIZE = 25


@require_GET
def pool_list(request):
    filtered_pools = Pool.objects.all()
    purpose = request.GET.get("purpose", "")
    if purpose in Purpose.values:
        filtered_pools = filtered_pools.filter(purpose=purpose)
    pools = filtered_pools.with_workload_counts().select_related("owner").order_by("name")
    page = Paginator(pools, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "totals": filtered_pools.totals(),
        "purpose": purpose,
        "purposes": Purpose.choices,
        "deployments": Deployment.choices,
    }
    # The filter form swaps only the table; any other htmx request gets the whole column.
    partial = "table" if request.htmx and request.htmx.target == "pool-table" else "content"
    return render_page(request, "pools/pool_list.html", context, partial=partial)


@require_GET
def pool_detail(request, slug):
    pool = get_object_or_404(Pool.objects.select_related("owner"), slug=slug)
    workloads = pool.workloads.select_related("owner")
    return render_page(request, "pools/pool_detail.html", {"pool": pool, "workloads": workloads})


@permission_required("pools.add_pool", raise_exception=True)
@require_http_methods(["GET", "POST"])
def pool_create(request):
    form = PoolForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        pool = form.save()
        messages.success(request, f"Pool {pool.name} created.")
        return redirect(pool)
    return render_page(request, "pools/pool_form.html", {"form": form, "pool": None})


@permission_required("pools.change_pool", raise_exception=True)
@require_http_methods(["GET", "POST"])
def pool_edit(request, slug):
    pool = get_object_or_404(Pool, slug=slug)
    form = PoolForm(request.POST or None, instance=pool)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"Pool {pool.name} saved.")
        return redirect(pool)
    return render_page(request, "pools/pool_form.html", {"form": form, "pool": pool})


@permission_required("pools.delete_pool", raise_exception=True)
@require_http_methods(["GET", "POST"])
def pool_delete(request, slug):
    pool = get_object_or_404(Pool, slug=slug)
    blocking_workloads = list(pool.workloads.all())
    if request.method == "POST" and not blocking_workloads:
        try:
            pool.delete()
        except ProtectedError:  # a workload was added between the page and the click
            messages.error(request, f"Pool {pool.name} still has workloads; it was kept.")
            return redirect(pool)
        messages.success(request, f"Pool {pool.name} deleted.")
        return redirect("pools:pool_list")
    return render_page(
        request,
        "pools/confirm_delete.html",
        {"object": pool, "blocking": blocking_workloads, "cancel_url": pool.get_absolute_url()},
    )


@require_GET
def workload_list(request):
    workloads = Workload.objects.with_pool()
    page = Paginator(workloads, PAGE_SIZE).get_page(request.GET.get("page"))
    return render_page(request, "pools/workload_list.html", {"page": page})


@require_GET
def workload_detail(request, slug):
    workload = get_object_or_404(Workload.objects.with_pool(), slug=slug)
    return render_page(request, "pools/workload_detail.html", {"workload": workload})


@permission_required("pools.add_workload", raise_exception=True)
@require_http_methods(["GET", "POST"])
def workload_create(request):
    initial = {"pool": request.GET.get("pool")} if request.GET.get("pool") else None
    form = WorkloadForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        workload = form.save()
        messages.success(request, f"Workload {workload.name} created.")
        return redirect(workload)
    return render_page(request, "pools/workload_form.html", {"form": form, "workload": None})


@permission_required("pools.change_workload", raise_exception=True)
@require_http_methods(["GET", "POST"])
def workload_edit(request, slug):
    workload = get_object_or_404(Workload, slug=slug)
    form = WorkloadForm(request.POST or None, instance=workload)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"Workload {workload.name} saved.")
        return redirect(workload)
    return render_page(request, "pools/workload_form.html", {"form": form, "workload": workload})


@permission_required("pools.delete_workload", raise_exception=True)
@require_http_methods(["GET", "POST"])
def workload_delete(request, slug):
    workload = get_object_or_404(Workload, slug=slug)
    if request.method == "POST":
        workload.delete()
        messages.success(request, f"Workload {workload.name} deleted.")
        return redirect("pools:workload_list")
    return render_page(
        request,
        "pools/confirm_delete.html",
        {"object": workload, "blocking": [], "cancel_url": workload.get_absolute_url()},
    )
