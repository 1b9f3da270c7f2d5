"""Permissions API: a folder's ACL read live (?host=&dataset=&path=), its subfolders, what a user may do there; a
change to one folder (202 + the Operation) or, with recursive, the count of everything inside (202 + the count's
Operation; the walk is in its params); walks listed, applied after their preview, stopped. Changes are an admin's."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.base import ACCEPTED, accepted, by_host
from appliance.choices import Role
from hostlib import acl
from permissions import services
from permissions.api import serializers as s
from permissions.models import AclWalk

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

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def apply(self, request, pk=None):
        """Apply the previewed walk (while its preview is fresh)."""
        return accepted(services.walk_apply_start(walk=self.get_object(), user=request.user))

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["post"])
    def stop(self, request, pk=None):
        """Stop a counting or applying walk between two files."""
        services.walk_stop(walk=self.get_object(), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
