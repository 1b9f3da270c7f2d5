from django.conf import settings
from django.db import models

from appliance.models import Host


class KeyEscrow(models.Model):
    """An encryption root's hex or raw key, sealed with the install's vault key (appliance.vault), so Tarn can unlock
    the dataset after a reboot and export the key. A passphrase is never escrowed."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="escrowed_keys")
    dataset = models.CharField(max_length=255, help_text="The encryption root the key opens.")
    keyformat = models.CharField(max_length=12)
    sealed = models.TextField(help_text="The key (hex), age-encrypted to the install's vault key.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["host", "dataset"]
        constraints = [models.UniqueConstraint(fields=["host", "dataset"], name="one_escrowed_key_per_root")]

    def __str__(self):
        return f"{self.host}:{self.dataset}"


class KeyExport(models.Model):
    """One key export, made by a worker and downloaded once: the keys as JSON, age-encrypted with the passphrase the
    admin chose for it (age's scrypt), so the file is safe in transit and at rest and opens with `age -d`."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="key_exports")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    roots = models.JSONField(default=list, help_text="The encryption roots whose keys it holds.")
    left_out = models.JSONField(default=list, help_text="Roots whose key Tarn cannot reach (passphrases), and why.")
    data = models.BinaryField(help_text="The age file (passphrase-encrypted).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.host}: {len(self.roots)} keys"

    @property
    def filename(self) -> str:
        return f"tarn-keys-{self.host.name}-{self.created_at:%Y%m%d-%H%M%S}.age"


class RetiredKey(models.Model):
    """A key an encryption root had before a change of key, kept until an admin removes it: sealed as the escrow was
    (if Tarn kept it) and its key file left on the NAS (if it had one). A change of key never destroys the only copy
    of a key that may still open a replica sent before it or an older export's datasets."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="retired_keys")
    dataset = models.CharField(max_length=255, help_text="The encryption root it opened.")
    keyformat = models.CharField(max_length=12)
    sealed = models.TextField(blank=True, help_text="The key (hex), age-encrypted to the vault key; empty: not kept.")
    keyfile = models.CharField(max_length=300, blank=True, help_text="Its key file left on the NAS; empty: none.")
    retired_at = models.DateTimeField(auto_now_add=True)
    retired_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["host", "dataset", "-retired_at"]

    def __str__(self):
        return f"{self.host}:{self.dataset} (retired {self.retired_at:%Y-%m-%d %H:%M})"
