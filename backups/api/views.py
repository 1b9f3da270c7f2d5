"""Backups API (admins only): the backups kept, back up now, upload, dry run, restore, download; the schedule.
Making, checking, restoring and downloading a backup and a new schedule passphrase need a fresh second factor
(appliance.auth.fresh: a token is one; a session confirms first)."""

from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from appliance.api.base import ACCEPTED, accepted, valid
from appliance.auth.fresh import fresh_factor, require_fresh
from appliance.choices import Role
from backups import selectors, services
from backups.api import serializers as s


class BackupViewSet(viewsets.ReadOnlyModelViewSet):
    """Tarn's configuration backups, newest first. Each holds every secret Tarn keeps: admins only."""

    serializer_class = s.BackupSerializer
    tarn_read_role = Role.ADMIN
    tarn_write_role = Role.ADMIN

    def get_queryset(self):
        return selectors.backup_list()

    @extend_schema(request=s.BackupRequest, responses=ACCEPTED)
    @action(detail=False, methods=["post"], url_path="now")
    @fresh_factor
    def now(self, request):
        """Back up now, sealed with this passphrase (never stored)."""
        return accepted(services.backup_start(user=request.user, **valid(s.BackupRequest, request).validated_data))

    @extend_schema(request={"multipart/form-data": s.BackupUploadRequest}, responses={201: s.BackupSerializer})
    @action(detail=False, methods=["post"], parser_classes=[MultiPartParser])
    def upload(self, request):
        """A backup file to check and restore (kept, sealed, for a day)."""
        length = request.META.get("CONTENT_LENGTH", "")
        if length.isdigit() and int(length) > services.MAX_UPLOAD + (1 << 20):
            raise ValidationError({"file": f"A Tarn backup is at most {services.MAX_UPLOAD >> 20} MiB."})
        f = valid(s.BackupUploadRequest, request).validated_data["file"]
        backup = services.upload_save(user=request.user, chunks=f.chunks(), size=f.size)
        return Response(s.BackupSerializer(backup).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.BackupCheckRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    @fresh_factor
    def check(self, request, pk=None):
        """The dry run: what a restore would add, change and remove (kept on the backup as `checked`)."""
        d = valid(s.BackupCheckRequest, request).validated_data
        return accepted(services.backup_restore_start(backup=self.get_object(), user=request.user, dry_run=True, **d))

    @extend_schema(request=s.BackupRestoreRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    @fresh_factor
    def restore(self, request, pk=None):
        """Replace Tarn's configuration with this backup (the current state kept first as a backup)."""
        d = valid(s.BackupRestoreRequest, request).validated_data
        return accepted(services.backup_restore_start(backup=self.get_object(), user=request.user, dry_run=False, **d))

    @extend_schema(request=s.BackupDeleteRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def delete(self, request, pk=None):
        """Delete a backup (its name typed): a worker removes its file."""
        d = valid(s.BackupDeleteRequest, request).validated_data
        return accepted(services.backup_delete_start(backup=self.get_object(), user=request.user, **d))

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    @action(detail=True, methods=["get"])
    @fresh_factor
    def download(self, request, pk=None):
        backup = self.get_object()
        try:
            fh = services.download(backup)
        except ValidationError as exc:
            raise Http404(" ".join(exc.messages)) from None
        return FileResponse(fh, as_attachment=True, filename=backup.name)


class BackupScheduleView(APIView):
    """The backup schedule (one). A passphrase given sets the scheduled backups' key; it is never stored."""

    tarn_read_role = Role.ADMIN
    tarn_write_role = Role.ADMIN

    @extend_schema(responses=s.BackupScheduleSerializer)
    def get(self, request):
        return Response(s.BackupScheduleSerializer(services.schedule_get()).data)

    @extend_schema(request=s.BackupScheduleSerializer, responses=s.BackupScheduleSerializer)
    def put(self, request):
        current = services.schedule_get()
        d = valid(s.BackupScheduleSerializer, request).validated_data
        if d.get("passphrase"):
            require_fresh(request)
        given = {
            k: getattr(current, k) for k in ("enabled", "every", "weekday", "day", "hour", "keep", "include_series")
        }
        given["push_host"] = current.push_host
        given.update(d)
        return Response(s.BackupScheduleSerializer(services.schedule_save(**given)).data)
