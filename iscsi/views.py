"""The iSCSI page: a host's targets with their portals, LUNs, allowed initiators and who is logged in (as last
read), and the forms that change them (each an Operation that applies the whole configuration)."""

from django.shortcuts import render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_POST

from appliance.choices import Role
from appliance.selectors import host_current
from appliance.web import start_or_back, started_or_form
from iscsi import selectors, services
from iscsi.forms import InitiatorForm, LunForm, TargetForm
from pools import selectors as pools


def _page(request, status=200, target_form=None, lun_form=None, initiator_form=None):
    host = host_current(request)
    zvols = pools.volume_names(host=host) if host else []
    targets = list(selectors.target_list(host=host)) if host else []
    for t in targets:  # each target's own form to change its portals or stop its logins
        initial = {"pk": t.pk, "iqn": t.iqn, "portals": "\n".join(t.portal_texts), "enabled": t.enabled}
        t.edit_form = TargetForm(initial=initial, auto_id=f"t{t.pk}_%s")
    context = {
        "host": host,
        "targets": targets,
        "zvols": zvols,
        "target_form": target_form or TargetForm(),
        "lun_form": lun_form or LunForm(zvols=zvols, targets=targets),
        "initiator_form": initiator_form or InitiatorForm(targets=targets),
        "can_change": request.user.has_role(Role.OPERATOR),
    }
    return render(request, "iscsi/iscsi_page.html", context, status=status)


@require_GET
def iscsi_page(request):
    return _page(request)


@require_POST
def target_save(request):
    return started_or_form(request, TargetForm(request.POST), services.target_save_start, _page, "target_form")


@require_POST
def lun_add(request):
    host = host_current(request)
    targets = selectors.target_list(host=host) if host else []
    form = LunForm(request.POST, zvols=pools.volume_names(host=host) if host else [], targets=targets)
    return started_or_form(request, form, services.lun_add_start, _page, "lun_form")


@sensitive_post_parameters("chap_secret", "mutual_secret")
@require_POST
def initiator_save(request):
    host = host_current(request)
    form = InitiatorForm(request.POST, targets=selectors.target_list(host=host) if host else [])
    return started_or_form(request, form, services.initiator_save_start, _page, "initiator_form")


def _removal(request, start, pk):
    return start_or_back(
        request, start, "iscsi-page", host=host_current(request), pk=pk, confirm=request.POST.get("confirm", "")
    )


@require_POST
def target_delete(request, pk):
    return _removal(request, services.target_delete_start, pk)


@require_POST
def lun_remove(request, pk):
    return _removal(request, services.lun_remove_start, pk)


@require_POST
def initiator_remove(request, pk):
    return _removal(request, services.initiator_remove_start, pk)


@require_POST
def sessions_read(request):
    return start_or_back(request, services.sessions_read_start, "iscsi-page", host=host_current(request))
