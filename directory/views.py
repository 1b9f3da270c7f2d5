"""The directory page: the current host's domain (join, its health, leave) or LDAP directory (set up, its health,
remove) and its users and groups, paged and searched from Tarn's copy. Joining, leaving and LDAP's settings are an
admin's; refreshing the copy and checking, an operator's."""

from django.shortcuts import render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_POST

from appliance.auth import requires
from appliance.choices import AccountKind, Role
from appliance.selectors import host_current
from appliance.web import start_or_back, started_or_form
from directory import selectors, services
from directory.forms import JoinForm, LdapForm, LdapRemoveForm, LeaveForm, NamesForm

LDAP_FIELDS = ("uri", "tls", "base_dn", "bind_dn", "schema", "ca_pem")


def _page(request, status=200, join_form=None, leave_form=None, ldap_form=None, ldap_remove_form=None):
    host = host_current(request)
    member = selectors.member_of(host=host)
    ldap = None if member else selectors.ldap_of(host=host)
    search = NamesForm(request.GET)
    search.is_valid()
    kind = search.cleaned_data.get("kind") or AccountKind.USER
    query = search.cleaned_data.get("q") or ""
    context = {
        "host": host,
        "member": member,
        "ldap": ldap,
        "join_form": join_form or JoinForm(),
        "leave_form": leave_form or LeaveForm(),
        "ldap_form": ldap_form or LdapForm(initial={f: getattr(ldap, f) for f in LDAP_FIELDS} if ldap else None),
        "ldap_remove_form": ldap_remove_form or LdapRemoveForm(),
        "search": search,
        "kind": kind,
        "query": query,
        "names": selectors.names_page(host=host, kind=kind, query=query, page=request.GET.get("page", 1))
        if member or ldap
        else None,
        "counts": selectors.names_counts(host=host) if member or ldap else {},
        "can_admin": request.user.has_role(Role.ADMIN),
        "can_run": request.user.has_role(Role.OPERATOR),
        "operations": selectors.recent_operations(host=host) if host else [],
    }
    template = (
        "directory/_names.html" if request.htmx and request.htmx.target == "names" else "directory/directory_page.html"
    )
    return render(request, template, context, status=status)


@require_GET
def directory_page(request):
    return _page(request)


def _started(request, form, start, bound: str):
    return started_or_form(request, form, start, _page, bound)


@sensitive_post_parameters("password")
@requires(write=Role.ADMIN)
@require_POST
def directory_join(request):
    return _started(request, JoinForm(request.POST), services.member_join_start, "join_form")


@sensitive_post_parameters("password")
@requires(write=Role.ADMIN)
@require_POST
def directory_leave(request):
    return _started(request, LeaveForm(request.POST), services.member_leave_start, "leave_form")


@require_POST
def directory_refresh(request):
    return start_or_back(request, services.names_refresh_start, "directory-page", host=host_current(request))


@require_POST
def directory_check(request):
    return start_or_back(request, services.member_check_start, "directory-page", host=host_current(request))


@sensitive_post_parameters("bind_password")
@requires(write=Role.ADMIN)
@require_POST
def directory_ldap(request):
    return _started(request, LdapForm(request.POST), services.ldap_configure_start, "ldap_form")


@requires(write=Role.ADMIN)
@require_POST
def directory_ldap_remove(request):
    return _started(request, LdapRemoveForm(request.POST), services.ldap_remove_start, "ldap_remove_form")
