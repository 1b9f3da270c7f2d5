"""Permissions API: a folder's ACL read live (?host=&dataset=&path=), its subfolders, what a user may do there; a
change to one folder (202 + the Operation) or, with recursive, the count of everything inside (202 + the count's
Operation; the walk is in its params); walks listed, applied after their preview, stopped. Changes are an admin's."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.base import ACCEPTED, accepted, by_host, valid
from appliance.api.serializers import ConfirmRequest, HostRequest
from appliance.choices import Role
from hostlib import acl
from permissions import services
from permissions.api import serializers as s
from permissions.models import AclWalk, QuotaUse

FOLDER = [
    OpenApiParameter("host", str, required=True, description="A host's name."),
    OpenApiParameter("dataset", str, required=True, description="A mounted filesystem, e.g. tank/office."),
    OpenApiParameter("path", str, description="A folder below its mount point, e.g. team/2026."),
]


def _where(request, shape=s.FolderRequest):
    data = shape(data=request.query_params if request.method == "GET" else request.data)
    data.is_valid(raise_exception=True)
    d = dict(data.validated_data)
    return services.place(host=d.pop("host"), dataset=d.pop("dataset"), path=d.pop("path")), d


def _entries(a: acl.Acl, names: dict) -> list[dict]:
    return [
        {
            "kind": "user" if e.tag == acl.USER else "group",
            "id": e.id,
            "name": names.get(("u" if e.tag == acl.USER else "g", e.id), str(e.id)),
            "perms": acl.perms_text(e.perms),
        }
        for e in a.named
    ]


def _shape(a: acl.Acl, names: dict) -> dict:
    mask = a.get(acl.MASK)
    return {
        "owner_perms": acl.perms_text(a.get(acl.USER_OBJ).perms),
        "group_perms": acl.perms_text(a.get(acl.GROUP_OBJ).perms),
        "other_perms": acl.perms_text(a.get(acl.OTHER).perms),
        "mask": acl.perms_text(mask.perms) if mask else None,
        "entries": _entries(a, names),
    }


class AclViewSet(viewsets.ViewSet):
    """A folder's ACL, read live from the host and changed as an Operation."""

    def get_required_role(self, request):
        return Role.ADMIN if request.method == "POST" else None

    @extend_schema(parameters=FOLDER, responses=s.AclOut)
    def list(self, request):
        """The folder's owner, group, mode, ACL entries (by name), default ACL and getfacl's text."""
        where, _ = _where(request)
        f = services.folder_read(where=where)
        body = {
            "path": f.path,
            "owner": f.owner,
            "group": f.group,
            "uid": f.uid,
            "gid": f.gid,
            "mode": format(f.mode, "04o"),
            **_shape(f.access, f.names),
            "default": _shape(f.default, f.names) if f.default else None,
            "getfacl": f.text,
            "other_dataset": f.other_dataset,
        }
        return Response(s.AclOut(body).data)

    @extend_schema(request=s.AclRequest, responses=ACCEPTED)
    def create(self, request):
        """Write the ACL on the folder, or with recursive count what it would change inside (apply the walk after)."""
        where, d = _where(request, s.AclRequest)
        recursive, confirm = d.pop("recursive"), d.pop("confirm")
        d["entries"] = [dict(e) for e in d["entries"]]
        kwargs = {"host": where.host, "user": request.user, "dataset": where.dataset, "path": where.path}
        if recursive:
            walk = services.walk_count_start(**kwargs, spec=d, confirm=confirm)
            return accepted(walk.count_operation)
        return accepted(services.acl_set_start(**kwargs, spec=d, confirm=confirm))

    @extend_schema(parameters=FOLDER, responses=dict)
    @action(detail=False, methods=["get"])
    def folders(self, request):
        """The folder's subfolders (sorted, at most 500; names with control characters are counted, not shown)."""
        where, _ = _where(request)
        return Response(services.folder_children(where=where))

    @extend_schema(parameters=[*FOLDER, OpenApiParameter("user", str, required=True)], responses=dict)
    @action(detail=False, methods=["get"])
    def effective(self, request):
        """What a user may do in the folder (perms: r=4 w=2 x=1) and why, with each folder on the way from /."""
        where, d = _where(request, s.EffectiveRequest)
        folder = services.folder_read(where=where)
        return Response(services.effective_for(where=where, folder=folder, username=d["user"]))


class AclWalkViewSet(viewsets.ReadOnlyModelViewSet):
    """Changes to everything in a folder: counted (the preview), then applied, or stopped. Filter: ?host=name."""

    serializer_class = s.AclWalkSerializer

    def get_queryset(self):
        return by_host(AclWalk.objects.select_related("host", "created_by"), self.request)

    def get_required_role(self, request):
        return Role.ADMIN if self.action in ("apply", "stop") else None

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def apply(self, request, pk=None):
        """Apply the previewed walk (while its preview is fresh); confirm: the folder's name, when the preview found
        ACLs it removes or owners it changes."""
        confirm = request.data.get("confirm", "") if hasattr(request.data, "get") else ""
        return accepted(services.walk_apply_start(walk=self.get_object(), user=request.user, confirm=str(confirm)))

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["post"])
    def stop(self, request, pk=None):
        """Stop a counting or applying walk between two files."""
        services.walk_stop(walk=self.get_object(), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(
    parameters=[
        OpenApiParameter("host", str, description="A host's name."),
        OpenApiParameter("kind", str, enum=["user", "group", "project"]),
        OpenApiParameter("q", str, description="Part of the name."),
    ]
)
class QuotaUseViewSet(viewsets.ReadOnlyModelViewSet):
    """Each account's use of each dataset with its quotas, as last read (the fullest first); set or clear a quota,
    make a folder a project, read again."""

    serializer_class = s.QuotaUseSerializer

    def get_queryset(self):
        rows = by_host(QuotaUse.objects.select_related("host"), self.request)
        kind, query = self.request.query_params.get("kind", ""), (self.request.query_params.get("q") or "")[:80]
        if kind:
            rows = rows.filter(kind=kind)
        if query:
            rows = rows.filter(name__icontains=query)
        return rows.order_by("-percent", "-used", "pk")

    def get_required_role(self, request):
        return Role.ADMIN if self.action in ("set", "project") else None

    @extend_schema(request=s.QuotaSetRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"], url_path="set")
    def set(self, request):
        """Set an account's quotas on a dataset (both empty: cleared). Below its use: allowed, and said."""
        return accepted(services.quota_set_start(user=request.user, **valid(s.QuotaSetRequest, request).validated_data))

    @extend_schema(request=s.ProjectRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def project(self, request):
        """Give a folder and everything inside a project id (then set a project quota on it)."""
        return accepted(
            services.project_assign_start(user=request.user, **valid(s.ProjectRequest, request).validated_data)
        )

    @extend_schema(request=HostRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"])
    def refresh(self, request):
        """Read every filesystem's quotas of a host now."""
        return accepted(services.quotas_read_start(user=request.user, **valid(HostRequest, request).validated_data))
