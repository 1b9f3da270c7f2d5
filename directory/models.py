"""A host's membership of a domain (one row while joined) with what its last check found, and the domain's users
and groups as winbind listed them (a cache the pages page through; refreshed on demand and after a join)."""

from django.db import models

from appliance.models import Host
from directory.choices import Backend, NameKind


class DomainMember(models.Model):
    host = models.OneToOneField(Host, on_delete=models.CASCADE, related_name="domain_member")
    realm = models.CharField(max_length=253, help_text="The domain's DNS name (Kerberos realm), upper case.")
    workgroup = models.CharField(max_length=15, help_text="Its NetBIOS name: LAB in LAB\\alice.")
    dc = models.CharField("DC", max_length=253, blank=True, help_text="The DC named at the join; empty: found by DNS.")
    netbios_name = models.CharField(max_length=15, help_text="This host's account in the domain (NAME$).")
    backend = models.CharField(max_length=8, choices=Backend.choices)
    default_range = models.CharField(max_length=32)
    domain_range = models.CharField(max_length=32)
    joined_at = models.DateTimeField()
    joined_by = models.CharField(max_length=150, blank=True, help_text="The domain account used to join.")
    # The last check (every few minutes, and after a join)
    checked_at = models.DateTimeField(null=True, blank=True)
    reachable = models.BooleanField(null=True, help_text="A DC answered (net ads info).")
    dc_name = models.CharField(max_length=253, blank=True, help_text="The DC that answered.")
    clock_offset = models.IntegerField(null=True, blank=True, help_text="Seconds the DC's clock is ahead of ours.")
    password_changed = models.DateTimeField(
        null=True, blank=True, help_text="When the machine account's password last changed (winbind, weekly)."
    )
    testjoin_ok = models.BooleanField(null=True, help_text="net ads testjoin: the machine account works.")
    trust_ok = models.BooleanField(null=True, help_text="wbinfo -t: winbind's secure channel to a DC.")
    winbind_ok = models.BooleanField(null=True, help_text="winbind answered at all (wbinfo -p).")
    said = models.TextField(blank=True, help_text="What the checks that failed said.")
    # The listing
    names_refreshed_at = models.DateTimeField(null=True, blank=True)
    names_seconds = models.FloatField(null=True, blank=True)
    names_left_out = models.IntegerField(default=0, help_text="Lines winbind gave that Tarn did not take.")

    class Meta:
        verbose_name = "domain membership"

    def __str__(self):
        return f"{self.host} in {self.realm}"

    @property
    def healthy(self) -> bool:
        return bool(self.reachable and self.testjoin_ok and self.trust_ok and self.winbind_ok)


class DirectoryName(models.Model):
    """One user or group of the joined domain (as LAB\\name, the way shares write it)."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="directory_names")
    kind = models.CharField(max_length=5, choices=NameKind.choices)
    name = models.CharField(max_length=64, help_text="As winbind gives it (lower case).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "kind", "name"], name="directory_name_once")]
        ordering = ["name"]

    def __str__(self):
        return self.name
