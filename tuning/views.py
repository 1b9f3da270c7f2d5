"""Tuning pages: the network (links, MTU, bridges, bonds, VLANs), kernel and ZFS settings, base tuning's plan → apply → keep or
revert, and each change set with its measured effect."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from appliance.auth import requires
from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import add_service_errors, attempt, form_errors, host_object_or_404, operation_page
from tuning import selectors, services
from tuning.choices import ChangeStatus
from tuning.forms import ApplyForm, BondForm, BridgeForm, LinkDeleteForm, MtuForm, PlanForm, SettingForm, VlanForm
from tuning.models import ChangeSet, Setting


def _nics(overview, *, data_only: bool = False) -> list[str]:
    """NICs free to bridge or bond: in no bridge or bond, carrying no VLAN; data_only: not the management link
    (never bonded)."""
    links = overview.get("links", [])
    carrying = {x.parent for x in links if x.kind == "vlan"}
    free = [x for x in links if x.kind == "ether" and not x.master and x.name not in carrying]
    return [x.name for x in free if not (data_only and x.management)]


def tuning_overview(request, **bound):
    """Links, kept settings and changes with the admin's forms; `bound` holds a form posted and refused (plan_form,
    setting_form, mtu_form or bridge_form), shown again with each error under its field (400)."""
    host = host_current(request)
    overview = selectors.tuning_overview(host=host) if host else {}
    return render(
        request,
        "tuning/tuning_overview.html",
        {
            "host": host,
            **overview,
            "is_admin": request.user.has_role(Role.ADMIN),
            "plan_form": PlanForm(),
            "setting_form": SettingForm(),
            "mtu_form": MtuForm(),
            "bridge_form": BridgeForm(nics=_nics(overview)) if host else None,
            "bond_form": BondForm(nics=_nics(overview, data_only=True)) if host else None,
            "vlan_form": VlanForm(),
            **bound,
        },
        status=400 if bound else 200,
    )


def _started(request, start, **kwargs):
    """A button that starts a change: its page (or the operation's), or back to the overview with the reason as a
    message (there is no form to show again)."""
    result = attempt(request, start, **kwargs)
    return _change_page(result) if result else redirect("tuning-overview")


def _submit(request, form, start, name: str):
    """A posted form of the overview (`name`) into a change: its page, or, with errors (its own or the service's),
    the overview shows it again open, each error under the field it names and the rest (a change waiting for Keep)
    above the form."""
    if form.is_valid():
        try:
            return _change_page(start(host=host_current(request), user=request.user, **form.cleaned_data))
        except ValidationError as exc:
            add_service_errors(form, exc)
    return tuning_overview(request, **{name: form})


def _change_page(result):
    """Where a started change goes: its change set's page, or its operation's."""
    if isinstance(result, ChangeSet):
        return redirect("tuning-change", pk=result.pk)
    return operation_page(result)


@requires(write=Role.ADMIN)
@require_POST
def tuning_plan(request):
    return _submit(request, PlanForm(request.POST), services.tuning_plan_start, "plan_form")


@requires(write=Role.ADMIN)
@require_POST
def tuning_setting(request):
    return _submit(request, SettingForm(request.POST), services.setting_start, "setting_form")


@requires(write=Role.ADMIN)
@require_POST
def tuning_refresh(request):
    return _started(request, services.tuning_refresh_start, host=host_current(request), user=request.user)


@requires(write=Role.ADMIN)
@require_POST
def link_mtu(request):
    return _submit(request, MtuForm(request.POST), services.link_mtu_start, "mtu_form")


@requires(write=Role.ADMIN)
@require_POST
def bridge_create(request):
    nics = _nics(selectors.tuning_overview(host=host_current(request)))
    return _submit(request, BridgeForm(request.POST, nics=nics), services.bridge_create_start, "bridge_form")


@requires(write=Role.ADMIN)
@require_POST
def bridge_delete(request):
    return _link_delete(request, services.bridge_delete_start)


@requires(write=Role.ADMIN)
@require_POST
def bond_create(request):
    nics = _nics(selectors.tuning_overview(host=host_current(request)), data_only=True)
    return _submit(request, BondForm(request.POST, nics=nics), services.bond_create_start, "bond_form")


@requires(write=Role.ADMIN)
@require_POST
def bond_delete(request):
    return _link_delete(request, services.bond_delete_start)


@requires(write=Role.ADMIN)
@require_POST
def vlan_create(request):
    return _submit(request, VlanForm(request.POST), services.vlan_create_start, "vlan_form")


@requires(write=Role.ADMIN)
@require_POST
def vlan_delete(request):
    return _link_delete(request, services.vlan_delete_start)


def _link_delete(request, start):
    """A bridge's, bond's or VLAN's button, its name typed to confirm: a refusal is a message on the overview."""
    form = LinkDeleteForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return redirect("tuning-overview")
    return _started(request, start, host=host_current(request), user=request.user, **form.cleaned_data)


@requires(write=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def change_detail(request, pk):
    cs = host_object_or_404(request, ChangeSet.objects.select_related("host", "operation", "measure_peer"), pk=pk)
    detail = selectors.change_detail(change_set=cs)
    form = ApplyForm(request.POST or None, peers=detail["peers"], addresses=detail["addresses"])
    if request.method == "POST" and form.is_valid():
        try:
            services.tuning_apply_start(change_set=cs, user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        return redirect("tuning-change", pk=cs.pk)
    context = {"cs": cs, "host": cs.host, "apply_form": form, "is_admin": request.user.has_role(Role.ADMIN), **detail}
    if request.htmx:
        response = render(request, "tuning/change_detail.html#change-status", context)
        if cs.status not in (ChangeStatus.PLANNING, ChangeStatus.APPLYING, ChangeStatus.PENDING):
            response.status_code = 286  # htmx: stop polling
        return response
    return render(request, "tuning/change_detail.html", context)


@requires(write=Role.ADMIN)
@require_POST
def change_keep(request, pk):
    cs = get_object_or_404(ChangeSet, pk=pk)
    attempt(request, services.change_keep_start, change_set=cs, user=request.user)
    return redirect("tuning-change", pk=cs.pk)


@requires(write=Role.ADMIN)
@require_POST
def change_revert(request, pk):
    cs = get_object_or_404(ChangeSet, pk=pk)
    return _started(request, services.change_revert_start, change_set=cs, user=request.user)


@requires(write=Role.ADMIN)
@require_POST
def setting_revert(request, pk):
    setting = get_object_or_404(Setting, pk=pk)
    return _started(request, services.tuning_revert_start, host=setting.host, user=request.user, setting=setting)


@requires(write=Role.ADMIN)
@require_POST
def setting_drift(request, pk):
    setting = get_object_or_404(Setting, pk=pk)
    action = request.POST.get("action", "")
    return _started(request, services.drift_start, host=setting.host, user=request.user, setting=setting, action=action)
