"""What Tarn last saw of a host's updates: what apt would install, the guard's verdicts, what is held."""

from django.db import models

from appliance.models import Host


class HostUpdates(models.Model):
    """One row per host, written by its check (and again after an update)."""

    host = models.OneToOneField(Host, on_delete=models.CASCADE, related_name="updates")
    checked_at = models.DateTimeField(null=True, blank=True)
    pending = models.JSONField(default=list, help_text="[{name, old, new, origins, security, kernel, zfs}]")
    removed = models.JSONField(default=list)
    guard = models.JSONField(default=dict, help_text="{userland, ok, verdicts: [{release, module, ok, why}], hold}")
    held = models.JSONField(default=list, help_text="What apt-mark shows held.")
    interrupted = models.BooleanField(default=False, help_text="dpkg was cut short: the next update repairs first.")
    reboot = models.BooleanField(default=False, help_text="A package asked for a reboot.")
    boot = models.JSONField(default=dict, help_text="The guard over the kernels in /boot, after the last update.")

    class Meta:
        verbose_name = "host's updates"
        verbose_name_plural = "hosts' updates"

    def __str__(self) -> str:
        return f"updates of {self.host.name}"

    @property
    def security(self) -> int:
        return sum(1 for p in self.pending if p.get("security"))
