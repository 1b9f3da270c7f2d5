"""Recovery API: a folder of a snapshot (or live) one page at a time, and a path's versions a pass at a time.
Operators and admins only (file names are data)."""

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.base import ACCEPTED, accepted, by_host, valid
from appliance.choices import Role
from recovery import services
from recovery.api import serializers as s
from recovery.models import Restore
from recovery.web import streamed


def _query(shape, request):
    data = shape(data=request.query_params)
    data.is_valid(raise_exception=True)
    d = dict(data.validated_data)
    path = d.pop("raw_path", "") or services.text_path(d.pop("path", ""))
    d.pop("path", None)
    return d, path


class SnapshotFileViewSet(viewsets.ViewSet):
    """Files inside snapshots."""

    tarn_read_role = Role.OPERATOR

    @extend_schema(parameters=[s.FolderQuery], responses=s.SnapshotFolderSerializer)
    def list(self, request):
        """One page (200 entries) of a folder: folders first, then by name; in a snapshot each entry compared with
        the live folder."""
        d, path = _query(s.FolderQuery, request)
        where = services.where(host=d["host"], dataset=d["dataset"], snapshot=d.get("snapshot", ""), path=path)
        return Response(s.SnapshotFolderSerializer(services.folder_page(where=where, page=d["page"])).data)

    @extend_schema(parameters=[s.FolderQuery], responses={(200, "application/octet-stream"): bytes})
    @action(detail=False)
    def download(self, request):
        """A regular file of a snapshot, as an attachment (up to TARN_DOWNLOAD_MAX_MB; audited)."""
        d, path = _query(s.FolderQuery, request)
        where = services.where(host=d["host"], dataset=d["dataset"], snapshot=d.get("snapshot", ""), path=path)
        return streamed(services.download(where=where, user=request.user))

    @extend_schema(parameters=[s.ChangesQuery], responses=s.ChangesSerializer)
    @action(detail=False)
    def changes(self, request):
        """What changed (zfs diff) between @since and @to (or now) under the path: 200 a page, and the counts."""
        d, path = _query(s.ChangesQuery, request)
        where = services.where(host=d["host"], dataset=d["dataset"], path=path)
        rows, found = services.changes(where=where, since=d["since"], to=d.get("to", ""), page=d["page"])
        body = {"changes": rows, "counts": found.counts, "matched": found.matched, "total": found.total}
        return Response(s.ChangesSerializer(body).data)

    @extend_schema(parameters=[s.VersionsQuery], responses=s.FileVersionsSerializer)
    @action(detail=False)
    def versions(self, request):
        """The snapshots in which the path differs, newest first, one pass (limit snapshots from offset)."""
        d, path = _query(s.VersionsQuery, request)
        where = services.where(host=d["host"], dataset=d["dataset"], path=path)
        found = services.versions(where=where, offset=d["offset"], limit=d["limit"])
        return Response(s.FileVersionsSerializer(found).data)


class RestoreViewSet(viewsets.ReadOnlyModelViewSet):
    """Restores out of snapshots (newest first); start one (202 + its Operation), stop a running one."""

    serializer_class = s.FileRestoreSerializer
    tarn_read_role = Role.OPERATOR

    def get_queryset(self):
        return by_host(Restore.objects.select_related("host"), self.request)

    @extend_schema(request=s.FileRestoreRequest, responses=ACCEPTED)
    def create(self, request):
        """A file or folder back from a snapshot: beside it as <name>.restored-<snapshot>, or in place (its name
        typed in confirm; a safety snapshot first)."""
        d = dict(valid(s.FileRestoreRequest, request).validated_data)
        path = d.pop("raw_path", "") or services.text_path(d.pop("path", ""))
        d.pop("path", None)
        return accepted(services.restore_start(user=request.user, path=path, **d).operation)

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["post"])
    def stop(self, request, pk=None):
        """Stop it: the half copy is removed, the original stays as it was."""
        services.restore_stop(restore=self.get_object(), user=request.user)
        return Response(status=204)
