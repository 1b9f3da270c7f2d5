"""Storage pages: pools, the pool-creation form, disks, snapshots. Pages read the inventory."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from appliance.auth import requires
from appliance.choices import Role
from appliance.forms import add_service_errors
from appliance.selectors import host_current
from pools import selectors, services
from pools.forms import PoolCreateForm, PoolDestroyForm
from pools.models import Pool


def pool_list(request):
    host = host_current(request)
    pools = selectors.pool_list(host=host) if host else []
    observed = selectors.inventory_observed_at(host=host) if host else None
    return render(request, "pools/pool_list.html", {"host": host, "pools": pools, "observed": observed})


def pool_detail(request, pk):
    host = host_current(request)
    pool = get_object_or_404(Pool, host=host, pk=pk)
    return render(
        request,
        "pools/pool_detail.html",
        {
            "host": host,
            "pool": pool,
            "vdevs": selectors.pool_vdevs(pool=pool),
            "datasets": selectors.pool_datasets(pool=pool),
            "destroy_form": PoolDestroyForm(),
        },
    )


@requires(write=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def pool_create(request):
    host = host_current(request)
    form = PoolCreateForm(request.POST or None, free_disks=selectors.disk_free(host=host) if host else [])
    estimate = None
    if request.method == "POST" and form.is_valid():
        layout = form.pool_layout()
        estimate = selectors.layout_estimate(host=host, layout=layout)
        if "preview" not in request.POST:
            try:
                op = services.pool_create_start(
                    host=host,
                    user=request.user,
                    name=form.cleaned_data["name"],
                    layout=layout,
                    pool_props=form.pool_props(),
                    root_props=form.root_props(),
                )
            except ValidationError as exc:
                add_service_errors(form, exc)
            else:
                return redirect("operation-detail", pk=op.pk)
    template = "pools/pool_form.html#pool-estimate" if request.htmx else "pools/pool_form.html"
    return render(request, template, {"host": host, "form": form, "estimate": estimate})


@requires(write=Role.ADMIN)
@require_POST
def pool_destroy(request, pk):
    host = host_current(request)
    pool = Pool.objects.filter(host=host, pk=pk).first()
    if pool is None:
        return redirect("pool-list")
    try:
        op = services.pool_destroy_start(
            host=host, user=request.user, name=pool.name, confirm=request.POST.get("confirm", "")
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("pool-detail", pk=pk)
    return redirect("operation-detail", pk=op.pk)


@require_POST
def inventory_refresh(request):
    host = host_current(request)
    try:
        op = services.inventory_refresh_start(host=host, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("pool-list")
    return redirect("operation-detail", pk=op.pk)


def disk_list(request):
    host = host_current(request)
    disks = selectors.disk_list(host=host) if host else []
    observed = selectors.inventory_observed_at(host=host) if host else None
    return render(request, "pools/disk_list.html", {"host": host, "disks": disks, "observed": observed})


def snapshot_list(request):
    host = host_current(request)
    args = {k: request.GET.get(k, "") for k in ("q", "dataset")}
    page = selectors.snapshot_page(
        host=host, page=request.GET.get("page", 1), order=request.GET.get("order", ""), **args
    )
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "pools/snapshot_list.html",
        {"host": host, "page": page, "query": query.urlencode(), "budget": selectors.snapshot_total(host=host), **args},
    )


def share_list(request):
    return render(
        request,
        "_not_built_yet.html",
        {"title": "Shares", "needs_zfs": True, "host": host_current(request), "what": "SMB and NFS shares on"},
    )
