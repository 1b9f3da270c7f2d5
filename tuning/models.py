"""Tuning: a host's network links as observed, the change sets Tarn applied (each revertible) and the settings in
them with the value each replaced; the link configuration Tarn owns (rendered into systemd-networkd files)."""

from django.db import models
from django.urls import reverse

from appliance.models import Host, Operation
from tuning.choices import NETWORK_KINDS, Action, ChangeKind, ChangeStatus, SettingKind


class Link(models.Model):
    """A network link on a host (NIC, bridge, bond, VLAN…) as last read by the host worker."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="links")
    name = models.CharField(max_length=15)
    kind = models.CharField(max_length=16)
    # The link-layer address as `ip` prints it: `xx:` pairs of up to the kernel's MAX_ADDR_LEN (32 bytes) — IPoIB's
    # 20 bytes are 59 characters, an Ethernet MAC 17.
    mac = models.CharField(max_length=95, blank=True)
    mtu = models.PositiveIntegerField()
    min_mtu = models.PositiveIntegerField(null=True, blank=True)
    max_mtu = models.PositiveIntegerField(null=True, blank=True)
    state = models.CharField(max_length=20)
    up = models.BooleanField(default=False)
    master = models.CharField(max_length=15, blank=True)
    parent = models.CharField(max_length=15, blank=True, help_text="A VLAN's: the link it is on.")
    perm_mac = models.CharField(
        max_length=95, blank=True, help_text="The NIC's own MAC where it carries another (a bond port)."
    )
    info = models.JSONField(default=dict, help_text="A bond's options, a VLAN's id, a bond port's state.")
    addresses = models.JSONField(default=list)  # [{"cidr", "family", "dynamic", "scope"}]
    counters = models.JSONField(default=dict)
    driver = models.CharField(max_length=40, blank=True)
    speed_mbps = models.PositiveIntegerField(null=True, blank=True)
    rings = models.JSONField(default=dict)
    offloads = models.JSONField(default=dict)
    managed = models.BooleanField(default=False, help_text="Tarn owns this link's persistent configuration.")
    management = models.BooleanField(default=False, help_text="Tarn or the admin reach the host through it.")
    observed_at = models.DateTimeField()

    class Meta:
        ordering = ["host", "name"]
        constraints = [models.UniqueConstraint(fields=["host", "name"], name="one_link_name_per_host")]

    def __str__(self):
        return self.name

    @property
    def cidrs(self) -> list[str]:
        return [a["cidr"] for a in self.addresses if a.get("scope", "global") == "global"]


class KernelState(models.Model):
    """A host's tunable values as last read: the sysctls of the families Tarn may tune, every ZFS parameter."""

    host = models.OneToOneField(Host, on_delete=models.CASCADE, related_name="kernel_state")
    sysctl = models.JSONField(default=dict)
    zfs = models.JSONField(default=dict)
    arc = models.JSONField(default=dict, help_text="arcstats: size, c_max, hits, misses (empty without ZFS).")
    observed_at = models.DateTimeField()

    def __str__(self):
        return f"{self.host} kernel"

    def values(self, kind: str) -> dict:
        return self.sysctl if kind == SettingKind.SYSCTL else self.zfs


class ChangeSet(models.Model):
    """One revertible change Tarn made on a host: a base-tuning profile, one setting, an MTU, a bridge."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="change_sets")
    kind = models.CharField(max_length=12, choices=ChangeKind.choices)
    title = models.CharField(max_length=200)
    profile = models.CharField(max_length=40, blank=True)
    status = models.CharField(max_length=12, choices=ChangeStatus.choices, default=ChangeStatus.PLANNING)
    reason = models.CharField(max_length=300, blank=True)
    # Network changes: the `ip -batch` lines that apply and undo it, the armed unit and its deadline.
    apply_lines = models.JSONField(default=list)
    restore_lines = models.JSONField(default=list)
    links = models.JSONField(default=list, help_text="Names of the links it touches.")
    target = models.JSONField(default=dict, help_text="What a network change sets (mtu, bridge, ports).")
    restore_unit = models.CharField(max_length=40, blank=True)
    deadline = models.DateTimeField(null=True, blank=True)
    # Measured effect: iperf3 (and fio) summaries before and after, with what was run.
    measure = models.BooleanField(default=False)
    measure_peer = models.ForeignKey(Host, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    measure_address = models.CharField(max_length=45, blank=True)
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)
    revert_if_worse = models.BooleanField(default=False)
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey("appliance.User", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    message = models.CharField(max_length=1000, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["host", "-created_at"], name="changeset_host_recent")]

    def __str__(self):
        return self.title

    def get_absolute_url(self):
        return reverse("tuning-change", args=[self.pk])

    @property
    def is_network(self) -> bool:
        return self.kind in NETWORK_KINDS

    @property
    def effect(self) -> dict:
        """Throughput after / before per direction, where both were measured."""
        ratios = {}
        for direction, before in (self.before or {}).items():
            after = (self.after or {}).get(direction)
            if isinstance(before, dict) and isinstance(after, dict) and before.get("bps"):
                ratios[direction] = after["bps"] / before["bps"]
        return ratios


class Setting(models.Model):
    """One kernel or ZFS setting Tarn changed: the value before, the value set, and why."""

    change_set = models.ForeignKey(ChangeSet, on_delete=models.CASCADE, related_name="settings")
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=8, choices=SettingKind.choices)
    key = models.CharField(max_length=100)
    original = models.CharField(max_length=200)
    value = models.CharField(max_length=200)
    reason = models.CharField(max_length=300, blank=True)
    source = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=4, choices=Action.choices, default=Action.SET)
    note = models.CharField(max_length=300, blank=True)
    active = models.BooleanField(default=False, help_text="In effect now and kept in Tarn's files.")
    reverted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["kind", "key"]
        constraints = [
            models.UniqueConstraint(
                fields=["host", "kind", "key"], condition=models.Q(active=True), name="one_active_setting_per_key"
            )
        ]

    def __str__(self):
        return f"{self.key} = {self.value}"
