"""iSCSI on a host: a Target (its IQN, its portals, enabled), its LUNs (each a zvol, with the unit serial initiators
know the disk by, kept for the LUN's life) and the Initiators allowed in (their IQN; CHAP user and secret, and the
mutual pair, sealed by the vault: only the workers open them, to write the host's configuration)."""

from django.db import models

from appliance.models import Host
from hostlib.iscsi import portal_text


def every_address() -> list:
    return [["0.0.0.0", 3260]]


class Target(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="iscsi_targets")
    iqn = models.CharField(max_length=223)
    portals = models.JSONField(default=every_address, help_text="[[address, port], …]: where it listens.")
    enabled = models.BooleanField(default=True)
    sessions = models.JSONField(default=list, help_text="The last read: [{initiator, state, addresses}].")
    sessions_read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["iqn"]
        constraints = [models.UniqueConstraint(fields=["host", "iqn"], name="iscsi_target_unique")]

    def __str__(self):
        return self.iqn

    @property
    def portal_texts(self) -> list[str]:
        return [portal_text(a, p) for a, p in self.portals]


class Lun(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+")
    target = models.ForeignKey(Target, on_delete=models.CASCADE, related_name="luns")
    number = models.PositiveSmallIntegerField()
    zvol = models.CharField(max_length=255)
    serial = models.CharField(max_length=36)
    write_back = models.BooleanField(default=False)
    read_only = models.BooleanField(default=False)

    class Meta:
        ordering = ["target", "number"]
        constraints = [
            models.UniqueConstraint(fields=["target", "number"], name="iscsi_lun_number_unique"),
            models.UniqueConstraint(fields=["host", "zvol"], name="iscsi_lun_zvol_unique"),
        ]

    def __str__(self):
        return f"LUN {self.number} ({self.zvol})"


class Initiator(models.Model):
    target = models.ForeignKey(Target, on_delete=models.CASCADE, related_name="initiators")
    iqn = models.CharField(max_length=223)
    chap_user = models.CharField(max_length=255, blank=True)
    chap_secret = models.TextField(blank=True, help_text="Sealed (appliance.vault).")
    mutual_user = models.CharField(max_length=255, blank=True)
    mutual_secret = models.TextField(blank=True, help_text="Sealed (appliance.vault).")

    class Meta:
        ordering = ["iqn"]
        constraints = [models.UniqueConstraint(fields=["target", "iqn"], name="iscsi_initiator_unique")]

    def __str__(self):
        return self.iqn
