"""Forms for storage: the shape of a request; rules against the live system are in services."""

from django import forms

from appliance.fields import IntegerField, PassphraseRoundsField, model_formfield
from appliance.forms import ConfirmField
from hostlib.zpool import PoolLayout, VdevSpec
from pools.choices import DatasetType, Layout
from pools.models import SnapshotTask
from pools.templatetags.zfs_values import gb

ROLE_LAYOUTS = [("", "None"), ("stripe", "Stripe"), ("mirror", "Mirror")]
# OpenZFS 2.3's xattr=on is sa (it prints sa as on): the two choices that differ are sa and dir.
XATTR_CHOICES = [("sa", "sa (in the inode)"), ("dir", "dir (hidden directories, slower)")]


def disk_choice(d) -> tuple[str, str]:
    """A disk as a choice: its by-id name, size and what it is."""
    return d.by_id or d.path, f"{d.by_id or d.path} — {gb(d.size)} {d.media}{' ' + d.model if d.model else ''}"


class PoolCreateForm(forms.Form):
    name = forms.CharField(max_length=255, help_text="Starts with a letter; letters, digits, _ . : -")
    layout = forms.ChoiceField(
        choices=Layout.choices,
        initial=Layout.MIRROR,
        help_text="Mirrors give the most IOPS per disk; RAID-Z gives the most space.",
    )
    disks = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, help_text="Free disks only.")
    disks_per_vdev = IntegerField(
        min_value=1,
        max_value=64,
        required=False,
        help_text="Split the chosen disks into vdevs of this many (empty: one vdev).",
    )
    log_layout = forms.ChoiceField(
        choices=ROLE_LAYOUTS,
        required=False,
        label="Log (SLOG)",
        help_text="Only sync writes use it (NFS, databases, VMs); mirror it.",
    )
    log_disks = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, required=False)
    special_layout = forms.ChoiceField(
        choices=ROLE_LAYOUTS,
        required=False,
        label="Special (metadata)",
        help_text="Losing it loses the pool: always mirror it.",
    )
    special_disks = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, required=False)
    cache_disks = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Cache (L2ARC)",
        help_text="Helps reads only once RAM (ARC) is full.",
    )
    spare_disks = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, required=False, label="Spares")
    ashift = IntegerField(
        min_value=9,
        max_value=16,
        initial=12,
        help_text="Sector size as a power of two: 12 = 4 KiB (right for nearly every disk).",
    )
    autotrim = forms.BooleanField(required=False, initial=True, help_text="Tell SSDs about freed blocks.")
    compression = forms.ChoiceField(
        choices=[(c, c) for c in ("lz4", "zstd", "off", "gzip")],
        initial="lz4",
        help_text="lz4 costs almost nothing and usually saves space and time.",
    )
    atime = forms.ChoiceField(
        choices=[("off", "off"), ("on", "on")],
        initial="off",
        help_text="Off: reading a file does not write its access time.",
    )
    xattr = forms.ChoiceField(
        choices=XATTR_CHOICES,
        initial="sa",
        help_text="sa keeps extended attributes in the inode: faster for SMB and ACLs (zfs get prints it as on).",
    )
    casesensitivity = forms.ChoiceField(
        choices=[("sensitive", "sensitive"), ("insensitive", "insensitive"), ("mixed", "mixed")],
        initial="sensitive",
        help_text="Fixed at creation. insensitive suits Windows/macOS clients.",
    )
    sync = forms.ChoiceField(
        choices=[("standard", "standard"), ("always", "always"), ("disabled", "disabled")],
        initial="standard",
        help_text="disabled risks the last seconds of writes on power loss.",
    )

    encryption = forms.ChoiceField(
        choices=[
            ("", "Off"),
            ("passphrase", "Passphrase (typed at every import or unlock; never stored)"),
            ("hex", "Hex key (kept in a key file on the NAS; loads at import)"),
            ("raw", "Raw key (kept in a key file on the NAS; loads at import)"),
        ],
        required=False,
        help_text="Encrypts the pool's root dataset: every dataset made in it inherits its key. A lost key is lost data.",
    )
    passphrase = forms.CharField(
        required=False, max_length=512, strip=False, widget=forms.PasswordInput, help_text="8 to 512 bytes."
    )
    passphrase_confirm = forms.CharField(
        required=False, max_length=512, strip=False, widget=forms.PasswordInput, label="Passphrase again"
    )
    pbkdf2iters = PassphraseRoundsField()

    GROUPS = (
        ("Data vdevs", ("name", "layout", "disks", "disks_per_vdev"), True),
        (
            "Log, special, cache and spares",
            ("log_layout", "log_disks", "special_layout", "special_disks", "cache_disks", "spare_disks"),
            False,
        ),
        ("Options", ("ashift", "autotrim", "compression", "atime", "xattr", "casesensitivity", "sync"), False),
        ("Encryption", ("encryption", "passphrase", "passphrase_confirm", "pbkdf2iters"), False),
    )

    def groups(self):
        """Sections of the form; a closed one opens when one of its fields has an error."""
        return [
            (title, [self[n] for n in names], is_open or any(self[n].errors for n in names))
            for title, names, is_open in self.GROUPS
        ]

    def __init__(self, *args, free_disks=(), **kwargs):
        super().__init__(*args, **kwargs)
        choices = [disk_choice(d) for d in free_disks]
        for field in ("disks", "log_disks", "special_disks", "cache_disks", "spare_disks"):
            self.fields[field].choices = choices

    def clean(self):
        data = super().clean()
        chosen = [
            d for f in ("disks", "log_disks", "special_disks", "cache_disks", "spare_disks") for d in data.get(f, [])
        ]
        if len(chosen) != len(set(chosen)):
            self.add_error("disks", "A disk can only have one role.")
        per_vdev = data.get("disks_per_vdev")
        if per_vdev and data.get("disks") and len(data["disks"]) % per_vdev:
            self.add_error("disks_per_vdev", f"{len(data['disks'])} disks do not split into vdevs of {per_vdev}.")
        for role in ("log", "special"):
            if data.get(f"{role}_disks") and not data.get(f"{role}_layout"):
                self.add_error(f"{role}_layout", "Choose stripe or mirror for these disks.")
        return data

    def pool_layout(self) -> PoolLayout:
        d = self.cleaned_data
        kind, disks = d["layout"], list(d["disks"])
        if kind == "stripe":
            data = tuple(VdevSpec("stripe", (disk,)) for disk in disks)
        else:
            n = d.get("disks_per_vdev") or len(disks)
            data = tuple(VdevSpec(kind, tuple(disks[i : i + n])) for i in range(0, len(disks), n))
        return PoolLayout(
            data,
            log=self._role("log"),
            special=self._role("special"),
            cache=tuple(d.get("cache_disks") or ()),
            spare=tuple(d.get("spare_disks") or ()),
        )

    def _role(self, prefix: str) -> tuple[VdevSpec, ...]:
        disks = self.cleaned_data.get(f"{prefix}_disks") or []
        if not disks:
            return ()
        if self.cleaned_data.get(f"{prefix}_layout") == "mirror":
            return (VdevSpec("mirror", tuple(disks)),)
        return tuple(VdevSpec("stripe", (disk,)) for disk in disks)

    def pool_props(self) -> dict:
        return {
            "ashift": str(self.cleaned_data["ashift"]),
            "autotrim": "on" if self.cleaned_data["autotrim"] else "off",
        }

    def root_props(self) -> dict:
        return {k: self.cleaned_data[k] for k in ("compression", "atime", "xattr", "casesensitivity", "sync")}


class PoolAddForm(forms.Form):
    """Grow a pool by one vdev (data, log or special), or by cache disks or spares."""

    role = forms.ChoiceField(
        choices=[
            ("data", "Data"),
            ("log", "Log (SLOG)"),
            ("special", "Special"),
            ("cache", "Cache"),
            ("spare", "Spare"),
        ],
        help_text="A data vdev cannot be removed again from a pool with RAID-Z: match the existing vdevs.",
    )
    layout = forms.ChoiceField(choices=Layout.choices, initial=Layout.MIRROR, help_text="Ignored for cache and spares.")
    disks = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, help_text="Free disks only.")

    def __init__(self, *args, free_disks=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["disks"].choices = [(d.by_id or d.path, d.by_id or d.path) for d in free_disks]

    def pool_layout(self) -> PoolLayout:
        role, kind, disks = self.cleaned_data["role"], self.cleaned_data["layout"], tuple(self.cleaned_data["disks"])
        if role in ("cache", "spare"):
            return PoolLayout(data=(), **{role: disks})
        vdevs = tuple(VdevSpec("stripe", (d,)) for d in disks) if kind == "stripe" else (VdevSpec(kind, disks),)
        return PoolLayout(data=(), **{role: vdevs}) if role != "data" else PoolLayout(data=vdevs)


class PoolDeviceForm(forms.Form):
    """Replace, attach or offline one member disk: the new disk (only free ones at least as large are offered) and
    the name typed to confirm (the service checks both again, and says which name)."""

    action = forms.ChoiceField(choices=[(a, a) for a in ("replace", "attach", "offline")], widget=forms.HiddenInput)
    device = forms.CharField(max_length=255, widget=forms.HiddenInput)
    new_device = forms.CharField(max_length=255, required=False, label="New disk", widget=forms.Select)
    confirm = ConfirmField(required=False, label="Type to confirm")

    def __init__(self, *args, plan=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["new_device"].widget.choices = [disk_choice(d) for d in (plan.fitting if plan else [])]
        if plan is not None:
            self.fields["confirm"].help_text = plan.confirm_why


class MediaSpeedForm(forms.Form):
    media = forms.ChoiceField(choices=[("hdd", "HDD"), ("ssd", "SSD"), ("nvme", "NVMe")])
    mb_s = IntegerField(min_value=1, max_value=100_000, label="MB/s", help_text="One disk, streaming.")
    iops = IntegerField(min_value=1, max_value=10_000_000, label="IOPS", help_text="One disk, 4 KiB random.")


class PoolDestroyForm(forms.Form):
    confirm = ConfirmField(label="Type the pool's name to destroy it and every dataset and snapshot in it")


INHERIT = [("", "inherit")]


class DatasetCreateForm(forms.Form):
    parent = forms.ChoiceField(help_text="The filesystem it goes under.")
    name = forms.CharField(max_length=200, help_text="Letters, digits, _ . : -")
    kind = forms.ChoiceField(
        choices=[(DatasetType.FILESYSTEM, "Filesystem"), (DatasetType.VOLUME, "Zvol (block device)")]
    )
    volsize = forms.CharField(required=False, label="Zvol size", help_text="For a zvol, e.g. 100G.")
    volblocksize = forms.ChoiceField(
        required=False,
        choices=[("", "default (16K)"), *((v, v) for v in ("4K", "8K", "16K", "32K", "64K", "128K"))],
        help_text="Zvols: match the guest's block size.",
    )
    compression = forms.ChoiceField(required=False, choices=INHERIT + [(c, c) for c in ("lz4", "zstd", "off")])
    recordsize = forms.ChoiceField(
        required=False,
        choices=INHERIT + [(v, v) for v in ("16K", "64K", "128K", "1M")],
        help_text="1M suits large media files; 16K–64K suits databases and VM images.",
    )
    quota = forms.CharField(required=False, help_text="e.g. 500G; empty for none.")
    casesensitivity = forms.ChoiceField(
        required=False,
        choices=INHERIT + [(v, v) for v in ("sensitive", "insensitive", "mixed")],
        help_text="Fixed at creation.",
    )

    def __init__(self, *args, parents=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["parent"].choices = [(p, p) for p in parents]

    def clean(self):
        data = super().clean()
        if data.get("kind") == "volume" and not data.get("volsize"):
            self.add_error("volsize", "A zvol needs a size.")
        return data

    def full_name(self) -> str:
        return f"{self.cleaned_data['parent']}/{self.cleaned_data['name']}"

    def props(self) -> dict:
        keys = ["compression", "recordsize", "quota", "casesensitivity"]
        if self.cleaned_data["kind"] == "volume":
            keys = ["compression", "volblocksize"]
        return {k: self.cleaned_data[k] for k in keys if self.cleaned_data.get(k)}


class DatasetEditForm(forms.Form):
    """Only the fields filled in are changed; to go back to the parent's value use 'inherit'."""

    compression = forms.ChoiceField(
        required=False, choices=[("", "—")] + [(c, c) for c in ("lz4", "zstd", "gzip", "off")]
    )
    recordsize = forms.ChoiceField(required=False, choices=[("", "—")] + [(v, v) for v in ("16K", "64K", "128K", "1M")])
    atime = forms.ChoiceField(required=False, choices=[("", "—"), ("on", "on"), ("off", "off")])
    sync = forms.ChoiceField(
        required=False, choices=[("", "—"), ("standard", "standard"), ("always", "always"), ("disabled", "disabled")]
    )
    quota = forms.CharField(required=False, help_text="e.g. 500G, or none")
    refquota = forms.CharField(required=False)
    reservation = forms.CharField(required=False)
    primarycache = forms.ChoiceField(
        required=False, choices=[("", "—"), ("all", "all"), ("metadata", "metadata"), ("none", "none")]
    )
    xattr = forms.ChoiceField(required=False, choices=[("", "—"), *XATTR_CHOICES])
    acltype = forms.ChoiceField(
        required=False, choices=[("", "—"), ("posix", "posix"), ("nfsv4", "nfsv4"), ("off", "off")]
    )

    def changes(self) -> dict:
        return {k: v for k, v in self.cleaned_data.items() if v}


class SnapshotCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    recursive = forms.BooleanField(required=False, help_text="Also every dataset below, at the same instant.")


class SnapshotTaskForm(forms.ModelForm):
    """The schedule's fields; the rules (a retention, the interval, one per dataset and prefix) are the service's."""

    class Meta:
        formfield_callback = model_formfield
        model = SnapshotTask
        fields = ["dataset", "recursive", "every_minutes", "prefix", "keep_count", "keep_days", "exclude"]
        widgets = {"exclude": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, datasets=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset"] = forms.ChoiceField(choices=[(d, d) for d in datasets], help_text="What to snapshot.")
