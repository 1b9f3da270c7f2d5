"""Directory API: each host's domain membership and its health; join (admin), leave (admin), refresh the names,
check now; each host's LDAP directory: set up (admin), remove (admin), refresh, check; the users and groups from
Tarn's copy (?host=name&kind=user|group&q=text, paged). Every change is 202 + the Operation."""

from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action

from appliance.api.base import ACCEPTED, accepted, by_host, valid
from appliance.choices import Role
from directory import services
from directory.api import serializers as s
from directory.models import DirectoryName, DomainMember, LdapDirectory


class RefreshAndCheck:
    """What a domain and an LDAP directory share: their names listed again into Tarn's copy (winbind, or ldapsearch
    on the host), and their health asked now."""

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def refresh(self, request, pk=None):
        """List the users and groups again into Tarn's copy."""
        return accepted(services.names_refresh_start(host=self.get_object().host, user=request.user))

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def check(self, request, pk=None):
        """Check now: a domain's DC, machine account, winbind, secure channel and clock; an LDAP server over TLS and
        sssd."""
        return accepted(services.member_check_start(host=self.get_object().host, user=request.user))


class DomainMemberViewSet(RefreshAndCheck, viewsets.ReadOnlyModelViewSet):
    """Each joined host's domain and the join's last check. Filter: ?host=name."""

    serializer_class = s.DomainMemberSerializer

    def get_queryset(self):
        return by_host(DomainMember.objects.select_related("host").order_by("host__name"), self.request)

    def get_required_role(self, request):
        return Role.ADMIN if self.action in ("join", "leave") else None

    @extend_schema(request=s.JoinRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def join(self, request):
        """Join a host to an AD domain (the password is used once and kept nowhere)."""
        return accepted(services.member_join_start(user=request.user, **valid(s.JoinRequest, request).validated_data))

    @extend_schema(request=s.LeaveRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def leave(self, request, pk=None):
        """Leave the domain (its realm typed again)."""
        member = self.get_object()
        d = valid(s.LeaveRequest, request).validated_data
        return accepted(services.member_leave_start(host=member.host, user=request.user, **d))


class LdapDirectoryViewSet(RefreshAndCheck, viewsets.ReadOnlyModelViewSet):
    """Each host's LDAP directory (read through sssd) and its last check. Filter: ?host=name."""

    serializer_class = s.LdapDirectorySerializer

    def get_queryset(self):
        return by_host(LdapDirectory.objects.select_related("host").order_by("host__name"), self.request)

    def get_required_role(self, request):
        return Role.ADMIN if self.action in ("configure", "remove") else None

    @extend_schema(request=s.LdapRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def configure(self, request):
        """Read users and groups from an LDAP directory on a host (or change the one it reads): searched once over
        TLS before anything changes; the bind password goes to the host and is kept nowhere in Tarn."""
        d = valid(s.LdapRequest, request).validated_data
        return accepted(services.ldap_configure_start(user=request.user, **d))

    @extend_schema(request=s.LdapRemoveRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def remove(self, request, pk=None):
        """Stop reading the directory (its URI typed again): sssd off, its files gone."""
        row = self.get_object()
        d = valid(s.LdapRemoveRequest, request).validated_data
        return accepted(services.ldap_remove_start(host=row.host, user=request.user, **d))


@extend_schema(
    parameters=[
        OpenApiParameter("host", str, description="A host's name."),
        OpenApiParameter("kind", str, enum=["user", "group"]),
        OpenApiParameter("q", str, description="Part of the name (case-insensitive)."),
    ]
)
class DirectoryNameViewSet(viewsets.ReadOnlyModelViewSet):
    """The joined domains' (and LDAP directories') users and groups as last listed (Tarn's copy; refresh to list
    again)."""

    serializer_class = s.DirectoryNameSerializer

    def get_queryset(self):
        rows = by_host(DirectoryName.objects.select_related("host__domain_member"), self.request)
        kind, query = self.request.query_params.get("kind"), (self.request.query_params.get("q") or "")[:80]
        if kind:
            rows = rows.filter(kind=kind)
        if query:
            rows = rows.filter(Q(name__icontains=query.partition("\\")[2] if "\\" in query else query))
        return rows.order_by("host__name", "kind", "name")
