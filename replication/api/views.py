"""Replication API: pairs (admin), tasks (admin to make or delete, operator to run), their runs; every change to a
host is 202 + the Operation."""

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from appliance.api.base import ACCEPTED, accepted, valid
from appliance.api.serializers import ConfirmRequest
from appliance.choices import Role
from replication import selectors, services
from replication.api import serializers as s


@extend_schema_view(
    create=extend_schema(request=s.PairCreateRequest, responses=ACCEPTED),
    destroy=extend_schema(responses=ACCEPTED),
)
class PairViewSet(viewsets.ReadOnlyModelViewSet):
    """Pairs of hosts: a key on the NAS that dials, allowed on the other only to receive into root (push) or to send
    send_root (pull) (admin)."""

    serializer_class = s.PairSerializer
    tarn_write_role = Role.ADMIN

    def get_queryset(self):
        return selectors.pair_list()

    def create(self, request):
        d = valid(s.PairCreateRequest, request).validated_data
        return accepted(services.pair_start(user=request.user, **d))

    def destroy(self, request, pk=None):
        return accepted(services.unpair_start(pair=self.get_object(), user=request.user))

    @extend_schema(request=s.QuotaRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def quota(self, request, pk=None):
        """A new quota on the pair's root on the target (what the pair may store there)."""
        quota = valid(s.QuotaRequest, request).validated_data["quota"]
        return accepted(services.pair_quota_start(pair=self.get_object(), quota=quota, user=request.user))

    @extend_schema(request=None, responses={200: s.PairSerializer})
    @action(detail=True, methods=["post"])
    def reviewed(self, request, pk=None):
        """Clear what a run found made outside the pair's root on the target, once an admin has looked."""
        pair = self.get_object()
        services.pair_intrusion_clear(pair=pair)
        pair.refresh_from_db()
        return Response(s.PairSerializer(pair).data)


@extend_schema_view(
    create=extend_schema(request=s.TaskCreateRequest, responses={201: s.TaskSerializer}),
    destroy=extend_schema(request=ConfirmRequest, responses=ACCEPTED),
)
class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    """Replication tasks: what goes from the pair's source to its target (admin makes and deletes; operator runs)."""

    serializer_class = s.TaskSerializer

    def get_queryset(self):
        return selectors.task_list().prefetch_related("datasets")

    def get_required_role(self, request):
        admin = ("create", "destroy", "failover", "restore", "retention", "resume_pruning")
        return Role.ADMIN if self.action in admin else None

    def create(self, request):
        d = valid(s.TaskCreateRequest, request).validated_data
        task = services.task_save(**d)
        return Response(s.TaskSerializer(task).data, status=status.HTTP_201_CREATED)

    def destroy(self, request, pk=None):
        confirm = valid(ConfirmRequest, request).validated_data["confirm"]
        return accepted(services.task_delete_start(task=self.get_object(), user=request.user, confirm=confirm))

    @extend_schema(request=None, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def run(self, request, pk=None):
        """Run the task now (one run per task at a time)."""
        return accepted(services.task_run_start(task=self.get_object(), user=request.user))

    @extend_schema(request=ConfirmRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def failover(self, request, pk=None):
        """Make the replica writable and mounted on the target (its name typed); the task is switched off."""
        confirm = valid(ConfirmRequest, request).validated_data["confirm"]
        return accepted(services.failover_start(task=self.get_object(), user=request.user, confirm=confirm))

    @extend_schema(request=s.RestoreRequest, responses=ACCEPTED)
    @action(detail=True, methods=["post"])
    def restore(self, request, pk=None):
        """Bring a snapshot of the replica back: a read-only clone on the target (how=clone, name: the new dataset)
        or sent back to the source (how=back, name: below the root of a pair from the target to the source)."""
        d = valid(s.RestoreRequest, request).validated_data
        return accepted(services.restore_start(task=self.get_object(), user=request.user, **d))

    @extend_schema(request=s.RetentionRequest, responses={200: s.TaskSerializer})
    @action(detail=True, methods=["post"])
    def retention(self, request, pk=None):
        """New retention numbers: keep, keep_hours (none younger pruned), prune_limit (per dataset and run)."""
        d = valid(s.RetentionRequest, request).validated_data
        task = services.task_retention_save(task=self.get_object(), **d)
        return Response(s.TaskSerializer(task).data)

    @extend_schema(request=None, responses={200: s.TaskSerializer})
    @action(detail=True, methods=["post"], url_path="resume-pruning")
    def resume_pruning(self, request, pk=None):
        """Pruning held by a run that brought many new snapshots resumes at the next run (an admin has looked)."""
        task = self.get_object()
        services.task_pruning_resume(task=task)
        task.refresh_from_db()
        return Response(s.TaskSerializer(task).data)

    @extend_schema(responses=s.TaskRunSerializer(many=True))
    @action(detail=True, methods=["get"])
    def runs(self, request, pk=None):
        """The task's runs, newest first."""
        return Response(s.TaskRunSerializer(selectors.task_runs(task=self.get_object()), many=True).data)
