"""Shares, the desired state: SMB shares, NFS exports, server settings and Samba users are rows; Tarn renders the
config files Samba and nfsd read from them. ShareStatus is what was last observed (who is connected)."""

from django.db import models

from appliance.models import Host
from shares.choices import NfsSquash, SmbPreset


class SmbShare(models.Model):
    """An SMB share of a dataset's mountpoint, shaped by a preset."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="smb_shares")
    name = models.CharField(max_length=80, help_text="What clients see: \\\\server\\name.")
    dataset = models.CharField(max_length=255, help_text="The dataset shared (its mountpoint is the share's path).")
    path = models.CharField(max_length=1024)
    comment = models.CharField(max_length=255, blank=True)
    preset = models.CharField(max_length=16, choices=SmbPreset.choices, default=SmbPreset.GENERAL)
    read_only = models.BooleanField(default=False)
    browseable = models.BooleanField(default=True, help_text="Listed when clients browse the server.")
    guest_ok = models.BooleanField(default=False, help_text="Anyone on the network may connect without a password.")
    valid_users = models.CharField(
        max_length=1000,
        blank=True,
        help_text="Users and @groups allowed; empty: all. A joined domain's as LAB\\alice, @LAB\\staff; a name "
        'with a space in double quotes: "@LAB\\Domain Users".',
    )
    hosts_allow = models.CharField(max_length=1000, blank=True, help_text="Addresses or networks; empty: all.")
    hosts_deny = models.CharField(max_length=1000, blank=True)
    previous_versions = models.BooleanField(
        default=True, help_text="Windows' Previous Versions tab lists the dataset's snapshots (up to 512)."
    )
    snapshot_prefix = models.CharField(
        max_length=40, default="auto", help_text="Previous Versions show snapshots named <prefix>-YYYY-MM-DD_HH-MM."
    )
    time_machine_quota = models.CharField(max_length=8, blank=True, help_text="Time Machine only: 500G, 2T…")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "SMB share"
        ordering = ["host", "name"]
        constraints = [
            models.UniqueConstraint(models.functions.Lower("name"), "host", name="one_smb_share_name_per_host")
        ]

    def __str__(self):
        return self.name


class NfsExport(models.Model):
    """An NFS export of a dataset's mountpoint to a list of clients."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="nfs_exports")
    dataset = models.CharField(max_length=255)
    path = models.CharField(max_length=1024)
    clients = models.TextField(help_text="One per line: a host, an address, a network (10.0.0.0/24) or *.")
    read_only = models.BooleanField(default=False)
    squash = models.CharField(max_length=16, choices=NfsSquash.choices, default=NfsSquash.ROOT)
    anonuid = models.PositiveIntegerField(null=True, blank=True, help_text="The anonymous user's id (default 65534).")
    anongid = models.PositiveIntegerField(null=True, blank=True)
    sec = models.CharField(max_length=8, default="sys", choices=[(s, s) for s in ("sys", "krb5", "krb5i", "krb5p")])
    async_writes = models.BooleanField(
        default=False, help_text="Faster, but a server crash loses writes clients were told were safe."
    )
    comment = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "NFS export"
        ordering = ["host", "path"]
        constraints = [models.UniqueConstraint(fields=["host", "path"], name="one_nfs_export_per_path")]

    def __str__(self):
        return self.path

    @property
    def client_list(self) -> list[str]:
        return [c.strip() for c in self.clients.splitlines() if c.strip()]


class ShareSettings(models.Model):
    """Server-wide SMB and NFS settings of one host."""

    host = models.OneToOneField(Host, on_delete=models.CASCADE, related_name="share_settings")
    smb_min_protocol = models.CharField(
        "SMB minimum protocol",
        max_length=4,
        default="SMB2",
        choices=[("SMB2", "SMB2"), ("SMB3", "SMB3")],
        help_text="SMB1 is never offered: it is slow and unsafe. SMB3 shuts out very old clients.",
    )
    smb_multichannel = models.BooleanField(
        "SMB multichannel", default=False, help_text="Lets one client use several NICs or queues at once."
    )
    smb_encryption = models.CharField(
        "SMB encryption",
        max_length=12,
        default="default",
        choices=[(v, v) for v in ("default", "if_required", "desired", "required")],
        help_text="required refuses clients that cannot encrypt; costs CPU on 10GbE.",
    )
    smb_signing = models.CharField(
        "SMB signing", max_length=12, default="default", choices=[(v, v) for v in ("default", "auto", "mandatory")]
    )
    workgroup = models.CharField(max_length=15, default="WORKGROUP")
    domain_workgroup = models.CharField(
        max_length=15,
        blank=True,
        editable=False,
        help_text="The joined domain's workgroup (set by Directory), served in place of workgroup while joined.",
    )
    server_string = models.CharField(max_length=64, default="Tarn NAS")
    nfs_v3 = models.BooleanField("NFSv3", default=True)
    nfs_v4 = models.BooleanField("NFSv4.1/4.2", default=True)
    nfs_threads = models.PositiveSmallIntegerField(
        "nfsd threads", default=8, help_text="More threads serve more clients at once; 8 per core is plenty."
    )

    class Meta:
        verbose_name = "share settings"
        verbose_name_plural = "share settings"

    def __str__(self):
        return f"share settings of {self.host}"


class SambaUser(models.Model):
    """A Samba account (and the local account it maps to). Its password lives only in Samba's database."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="samba_users")
    username = models.CharField(max_length=32)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "Samba user"
        ordering = ["host", "username"]
        constraints = [models.UniqueConstraint(fields=["host", "username"], name="one_samba_user_name_per_host")]

    def __str__(self):
        return self.username


class ShareStatus(models.Model):
    """Who is connected, as last read from smbstatus -j and nfsd (refreshed on demand and with the inventory)."""

    host = models.OneToOneField(Host, on_delete=models.CASCADE, related_name="share_status")
    smb_sessions = models.JSONField(default=list)
    nfs_clients = models.JSONField(default=list)
    observed_at = models.DateTimeField()

    class Meta:
        verbose_name = "share status"
        verbose_name_plural = "share statuses"

    def __str__(self):
        return f"share status of {self.host}"
