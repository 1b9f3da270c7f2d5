"""Storage pages: pools, the pool-creation form, disks, snapshots. Pages read the inventory."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from appliance.auth import requires
from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import (
    add_service_errors,
    host_object,
    host_object_or_404,
    safe_next,
    start_on_form,
    start_or_back,
)
from hostlib.digits import whole_number
from pools import selectors, services
from pools.forms import (
    DatasetCreateForm,
    DatasetEditForm,
    MediaSpeedForm,
    PoolAddForm,
    PoolCreateForm,
    PoolDestroyForm,
    PoolDeviceForm,
    SnapshotCreateForm,
    SnapshotTaskForm,
)
from pools.models import Dataset, Pool


def _pool(request, pk):
    """The pool of the URL on whichever host has it; the switcher follows it."""
    return host_object_or_404(request, Pool.objects.select_related("host"), pk=pk)


def _dataset(request, pk):
    return host_object_or_404(request, Dataset.objects.select_related("host", "pool"), pk=pk)


def pool_list(request):
    host = host_current(request)
    pools = selectors.pool_list(host=host) if host else []
    observed = selectors.inventory_observed_at(host=host) if host else None
    importable = selectors.importable_pools(host=host) if host else []
    return render(
        request, "pools/pool_list.html", {"host": host, "pools": pools, "observed": observed, "importable": importable}
    )


def pool_detail(request, pk):
    return _pool_page(request, _pool(request, pk))


def _pool_page(request, pool, *, status: int = 200, **forms):
    """A pool's page; forms: a posted form with its errors (dataset_form, add_form), shown open in its place."""
    host = pool.host
    generic = "generic" in ((host.facts or {}).get("aes_impl"), (host.facts or {}).get("gcm_impl"))
    return render(
        request,
        "pools/pool_detail.html",
        {
            "host": host,
            "pool": pool,
            "vdevs": selectors.pool_vdevs_noted(pool=pool),
            "panels": selectors.pool_panels(pool=pool),
            "datasets": selectors.pool_datasets(pool=pool),
            "destroy_form": PoolDestroyForm(),
            "dataset_form": DatasetCreateForm(parents=selectors.filesystem_names(pool=pool)),
            "can_change": request.user.has_role(Role.OPERATOR),
            "can_admin": request.user.has_role(Role.ADMIN),
            "free_disks": selectors.disk_free(host=host) if request.user.has_role(Role.ADMIN) else [],
            "add_form": PoolAddForm(free_disks=selectors.disk_free(host=host)),
            "scrub_schedule": selectors.scrub_schedule(pool=pool),
            # the kernel's generic AES or GCM matters only where something is encrypted: counted only then
            "slow_encryption": generic and selectors.encrypted_datasets(host=host).filter(pool=pool).count(),
            **forms,
        },
        status=status,
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
            started = start_on_form(
                form,
                services.pool_create_start,
                host=host,
                user=request.user,
                name=form.cleaned_data["name"],
                layout=layout,
                pool_props=form.pool_props(),
                root_props=form.root_props(),
                encryption=form.cleaned_data["encryption"],
                passphrase=form.cleaned_data["passphrase"],
                passphrase_confirm=form.cleaned_data["passphrase_confirm"],
                pbkdf2iters=form.cleaned_data["pbkdf2iters"],
            )
            if started:
                return started
    template = "pools/pool_form.html#pool-estimate" if request.htmx else "pools/pool_form.html"
    read = {"observed": selectors.inventory_observed_at(host=host), "reading": selectors.inventory_reading(host=host)}
    return render(request, template, {"host": host, "form": form, "estimate": estimate, **(read if host else {})})


@requires(write=Role.ADMIN)
@require_POST
def pool_destroy(request, pk):
    pool = host_object(request, Pool.objects.select_related("host"), pk=pk)
    if pool is None:  # destroyed already (a second click)
        return redirect("pool-list")
    return start_or_back(
        request,
        services.pool_destroy_start,
        pool.get_absolute_url(),
        host=pool.host,
        name=pool.name,
        confirm=request.POST.get("confirm", ""),
    )


@require_POST
def inventory_refresh(request):
    return start_or_back(request, services.inventory_refresh_start, "pool-list", host=host_current(request))


@requires(write=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def disk_list(request):
    host = host_current(request)
    form = MediaSpeedForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        services.media_speed_save(**form.cleaned_data)
        messages.success(request, f"New pools' previews now use these {form.cleaned_data['media']} figures.")
        return redirect("disk-list")
    disks = selectors.disk_list_noted(host=host) if host else []
    observed = selectors.inventory_observed_at(host=host) if host else None
    return render(
        request,
        "pools/disk_list.html",
        {"host": host, "disks": disks, "observed": observed, "form": form, "speeds": selectors.media_speeds()},
    )


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


@require_POST
def dataset_create(request, pk):
    """A refusal (the form's or the service's) shows the pool's page again with the form open, the error under its
    field and what was typed kept."""
    pool = _pool(request, pk)
    form = DatasetCreateForm(request.POST, parents=selectors.filesystem_names(pool=pool))
    if form.is_valid():
        size = form.cleaned_data["volsize"] if form.cleaned_data["kind"] == "volume" else None
        started = start_on_form(
            form,
            services.dataset_create_start,
            host=pool.host,
            user=request.user,
            name=form.full_name(),
            props=form.props(),
            volume_size=size,
        )
        if started:
            return started
    return _pool_page(request, pool, status=400, dataset_form=form)


def dataset_detail(request, pk):
    return _dataset_page(request, _dataset(request, pk))


def _dataset_page(request, dataset, *, status: int = 200, **forms):
    """A dataset's page; forms: a posted form with its errors (edit_form, snapshot_form), shown open in its place."""
    host = dataset.host
    return render(
        request,
        "pools/dataset_detail.html",
        {
            "host": host,
            "dataset": dataset,
            "edit_form": DatasetEditForm(),
            "properties": selectors.dataset_properties(dataset=dataset),
            "snapshot_form": SnapshotCreateForm(initial={"name": timezone.now().strftime("manual-%Y-%m-%d_%H-%M")}),
            "snapshots": selectors.snapshot_recent(dataset=dataset),
            "dependents": selectors.dataset_dependents(host=host, name=dataset.name),
            "can_change": request.user.has_role(Role.OPERATOR),
            **forms,
        },
        status=status,
    )


@require_POST
def dataset_edit(request, pk):
    dataset = _dataset(request, pk)
    form = DatasetEditForm(request.POST)
    if form.is_valid() and not form.changes():
        form.add_error(None, "Nothing to change: fill in the properties to set.")
    elif form.is_valid():
        started = start_on_form(
            form,
            services.dataset_set_start,
            host=dataset.host,
            user=request.user,
            name=dataset.name,
            props=form.changes(),
        )
        if started:
            return started
    return _dataset_page(request, dataset, status=400, edit_form=form)


@require_POST
def snapshot_create(request, pk):
    dataset = _dataset(request, pk)
    form = SnapshotCreateForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data  # name, recursive
        started = start_on_form(
            form, services.snapshot_create_start, host=dataset.host, user=request.user, dataset=dataset.name, **data
        )
        if started:
            return started
    return _dataset_page(request, dataset, status=400, snapshot_form=form)


@require_POST
def snapshot_destroy(request):
    back = safe_next(request, request.POST.get("next"), "snapshot-list")
    return start_or_back(
        request,
        services.snapshot_destroy_start,
        back,
        host=host_current(request),
        snapshots=request.POST.getlist("snapshots"),
    )


@require_http_methods(["GET", "POST"])
def snapshot_task_list(request):
    host = host_current(request)
    form = SnapshotTaskForm(request.POST or None, datasets=selectors.filesystem_names_on(host=host))
    if request.method == "POST" and form.is_valid():
        try:
            services.snapshot_task_save(host=host, data=form.cleaned_data)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Snapshots of {form.cleaned_data['dataset']} are scheduled.")
            return redirect("snapshot-task-list")
    return render(
        request,
        "pools/snapshot_task_list.html",
        {"host": host, "form": form, "tasks": selectors.snapshot_tasks_with_preview(host=host)},
    )


@require_POST
def snapshot_task_delete(request, pk):
    services.snapshot_task_delete(host=host_current(request), pk=pk)
    messages.success(request, "Schedule removed; its snapshots stay.")
    return redirect("snapshot-task-list")


@require_POST
def pool_import_scan(request):
    return start_or_back(request, services.pool_import_scan_start, "pool-list", host=host_current(request))


@requires(write=Role.ADMIN)
@require_POST
def pool_import(request):
    return start_or_back(
        request,
        services.pool_import_start,
        "pool-list",
        host=host_current(request),
        guid=request.POST.get("guid", ""),
        new_name=request.POST.get("new_name", "").strip(),
    )


@requires(write=Role.ADMIN)
@require_POST
def pool_add(request, pk):
    pool = _pool(request, pk)
    form = PoolAddForm(request.POST, free_disks=selectors.disk_free(host=pool.host))
    if form.is_valid():
        started = start_on_form(
            form, services.pool_add_start, host=pool.host, user=request.user, pool=pool.name, layout=form.pool_layout()
        )
        if started:
            return started
    return _pool_page(request, pool, status=400, add_form=form)


@requires(write=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def pool_device(request, pk):
    """Online, clear and detach act at once; replace, attach and offline go through a page that names the device,
    offers only free disks large enough and asks for a name typed (the service checks it all again)."""
    pool = _pool(request, pk)
    data = request.POST if request.method == "POST" else request.GET
    action, device = data.get("action", ""), data.get("device", "")
    member = selectors.device_member(pool=pool, device=device)
    if action not in selectors.CONFIRMED or member is None:
        kwargs = {"action": action, "device": device, "new_device": data.get("new_device", "")}
        if request.method == "GET":
            known = member is not None
            messages.error(
                request, "Choose replace, attach or offline." if known else f"{device} is not in {pool.name}."
            )
            return redirect(pool.get_absolute_url())
        return start_or_back(
            request, services.pool_device_start, pool.get_absolute_url(), host=pool.host, pool=pool.name, **kwargs
        )
    plan = selectors.device_plan(host=pool.host, member=member, action=action)
    form = PoolDeviceForm(request.POST or None, initial={"action": action, "device": device}, plan=plan)
    if request.method == "POST" and form.is_valid():
        started = start_on_form(
            form, services.pool_device_start, host=pool.host, user=request.user, pool=pool.name, **form.cleaned_data
        )
        if started:
            return started
    context = {"host": pool.host, "pool": pool, "action": action, "plan": plan, "form": form}
    return render(request, "pools/pool_device.html", context)


@require_POST
def scrub_schedule(request, pk):
    pool = _pool(request, pk)
    try:
        every = whole_number(request.POST.get("every_days") or "0")
        if every is None:
            raise ValueError("every_days")
        services.scrub_schedule_save(host=pool.host, pool=pool.name, every_days=every)
    except (ValueError, ValidationError) as exc:
        messages.error(request, " ".join(getattr(exc, "messages", ["Days must be a number."])))
    else:
        messages.success(request, f"{pool.name} is scrubbed every {every} days." if every else "Schedule removed.")
    return redirect(pool.get_absolute_url())


# The actions posted from a pool's or a dataset's page that start one operation on its host: the service and where
# each of its arguments comes from. A refusal goes back to the page with the reason (start_or_back).
def _posted(field: str, *, strip: bool = False):
    def get(request, obj):
        value = request.POST.get(field, "")
        return value.strip() if strip else value

    return get


def _name(request, obj):
    return obj.name


def _snapshot(request, obj):
    return f"{obj.name}@{request.POST.get('snapshot', '')}"


def _action(find, start, role=Role.OPERATOR, **arguments):
    @requires(write=role)
    @require_POST
    def view(request, pk):
        obj = find(request, pk)
        kwargs = {key: get(request, obj) for key, get in arguments.items()}
        return start_or_back(request, start, obj.get_absolute_url(), host=obj.host, **kwargs)

    view.__name__ = view.__qualname__ = start.__name__.removesuffix("_start")
    return view


pool_scrub = _action(_pool, services.pool_scrub_start, pool=_name, action=_posted("action"))
pool_trim = _action(_pool, services.pool_trim_start, pool=_name, action=_posted("action"))
pool_export = _action(_pool, services.pool_export_start, Role.ADMIN, name=_name)
dataset_inherit = _action(_dataset, services.dataset_inherit_start, name=_name, key=_posted("key"))
dataset_destroy = _action(_dataset, services.dataset_destroy_start, name=_name, confirm=_posted("confirm"))
dataset_rename = _action(_dataset, services.dataset_rename_start, name=_name, new_name=_posted("new_name", strip=True))
snapshot_rollback = _action(
    _dataset,
    services.snapshot_rollback_start,
    snapshot=_snapshot,
    destroy_newer=lambda request, obj: bool(request.POST.get("confirm")),
    confirm=_posted("confirm"),
)
snapshot_clone = _action(
    _dataset, services.snapshot_clone_start, snapshot=_snapshot, target=_posted("target", strip=True)
)
snapshot_hold = _action(
    _dataset,
    services.snapshot_hold_start,
    snapshot=_snapshot,
    tag=lambda request, obj: request.POST.get("tag", "").strip() or "tarn",
    release=lambda request, obj: request.POST.get("action") == "release",
)
