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
