"""A recursive apply of one folder's ACL to everything inside it: counted first (the preview: how many folders and
files, how many would change, what is skipped and why), then applied on the admin's go-ahead, stoppable. The ACL
itself is kept as the editor gave it (names) and as resolved on the host (ids), so the apply writes exactly what
was previewed."""

from django.conf import settings
from django.db import models
from django.urls import reverse

from appliance.models import Host, Operation
from permissions.choices import WalkStatus


class AclWalk(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="acl_walks")
    dataset = models.CharField(max_length=255)
    path = models.CharField(max_length=4096, blank=True, help_text="The folder below the dataset's mount point.")
    spec = models.JSONField(help_text="The ACL as the editor gave it, with the ids the host resolved.")
    status = models.CharField(max_length=12, choices=WalkStatus.choices, default=WalkStatus.COUNTING)
    preview = models.JSONField(default=dict, help_text="What the count found.")
    applied = models.JSONField(default=dict, help_text="What the apply did (so far, when stopped).")
    stop_requested = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    previewed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    count_operation = models.ForeignKey(Operation, null=True, on_delete=models.SET_NULL, related_name="+")
    apply_operation = models.ForeignKey(Operation, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.dataset}/{self.path}".rstrip("/")

    def get_absolute_url(self):
        return reverse("permissions-walk", args=[self.pk])

    @property
    def total(self) -> int:
        """Everything the preview met (what the apply's progress is measured against)."""
        return sum(self.preview.get(k, 0) for k in ("folders", "files", "links", "hardlinked", "other"))
