"""Forms for shares: SMB shares, NFS exports, server settings, Samba users and share folders."""

from django import forms

from appliance.fields import model_formfield
from appliance.validators import refuse_bidi
from hostlib.posix import FOLDER_MODES
from shares.choices import NFS_CONFIRMATION_FIELDS
from shares.models import NfsExport, ShareSettings, SmbShare


class _DatasetChoiceMixin:
    def _datasets(self, datasets):
        self.fields["dataset"] = forms.ChoiceField(
            choices=[(d, d) for d in datasets], help_text="Shared at its mountpoint. Create datasets on a pool's page."
        )


class SmbShareForm(_DatasetChoiceMixin, forms.ModelForm):
    class Meta:
        formfield_callback = model_formfield
        model = SmbShare
        fields = [
            "name",
            "dataset",
            "comment",
            "preset",
            "read_only",
            "browseable",
            "guest_ok",
            "valid_users",
            "hosts_allow",
            "hosts_deny",
            "previous_versions",
            "snapshot_prefix",
            "time_machine_quota",
        ]

    new_dataset = forms.CharField(
        required=False,
        max_length=255,
        label="…or create a new dataset",
        help_text="pool/name: made with the preset's properties (xattr=sa; multi-user adds POSIX ACLs; archive "
        "uses zstd and 1M records), then shared.",
    )

    def __init__(self, *args, datasets=(), **kwargs):
        super().__init__(*args, **kwargs)
        self._datasets(datasets)
        if self.instance.pk:
            del self.fields["new_dataset"]
        else:
            self.fields["dataset"].required = False
            self.fields["dataset"].choices = [("", "— choose —"), *self.fields["dataset"].choices]
            self.order_fields(["name", "dataset", "new_dataset"])

    def service_args(self) -> dict:
        return {"new_dataset": self.cleaned_data["new_dataset"]} if self.cleaned_data.get("new_dataset") else {}

    def clean(self):
        data = super().clean()
        if not self.instance.pk and not data.get("dataset") and not data.get("new_dataset"):
            self.add_error("dataset", "Choose a dataset or name a new one.")
        if data.get("new_dataset"):
            data["dataset"] = data["new_dataset"]
        return data


class NfsExportForm(_DatasetChoiceMixin, forms.ModelForm):
    class Meta:
        formfield_callback = model_formfield
        model = NfsExport
        fields = ["dataset", "clients", "read_only", "squash", "anonuid", "anongid", "sec", "async_writes", "comment"]
        widgets = {"clients": forms.Textarea(attrs={"rows": 3})}

    wildcard_ok = forms.BooleanField(
        required=False,
        label="Yes, export to every host",
        help_text="*, 0.0.0.0/0 or a very short network: anyone who can reach this server may mount it.",
    )

    root_ok = forms.BooleanField(
        required=False,
        label="Yes, client root is root here (admin only)",
        help_text="no_root_squash, or anonymous uid/gid 0: root on a client may change or delete any file.",
    )

    async_ok = forms.BooleanField(
        required=False,
        label="Yes, acknowledge writes before they are on disk",
        help_text="async: a server crash or power cut silently loses writes clients believe are saved.",
    )

    def __init__(self, *args, datasets=(), **kwargs):
        super().__init__(*args, **kwargs)
        self._datasets(datasets)
        refuse_bidi(self.fields, "comment")  # stored and shown only: no config file's pattern checks it

    def service_args(self) -> dict:
        """The risks ticked as confirmed; the service decides which an export needs."""
        return {"confirmed": [r for r, box in NFS_CONFIRMATION_FIELDS.items() if self.cleaned_data.get(box)]}


class ShareSettingsForm(forms.ModelForm):
    kept_filled = True  # drawn on the shares page for every request: its HTML kept while its values are the same

    class Meta:
        formfield_callback = model_formfield
        model = ShareSettings
        fields = [
            "smb_min_protocol",
            "smb_multichannel",
            "smb_encryption",
            "smb_signing",
            "workgroup",
            "server_string",
            "nfs_v3",
            "nfs_v4",
            "nfs_threads",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.domain_workgroup:  # joined: the domain's, until Tarn leaves it (Directory)
            self.fields["workgroup"].disabled = True
            self.fields[
                "workgroup"
            ].help_text = f"Served as {self.instance.domain_workgroup}, the joined domain's, until this host leaves it."


class SambaUserForm(forms.Form):
    username = forms.CharField(max_length=32, help_text="Lower-case; a local account without a shell is made for it.")
    password = forms.CharField(widget=forms.PasswordInput, min_length=8, max_length=128)


class ShareFolderForm(forms.Form):
    """Owner, group and mode of a share's root folder. Samba checks valid users; the folder then decides who
    may read or write, since each user reaches the files as their own local account."""

    owner = forms.ChoiceField(help_text="root, or one of the Samba users.")
    group = forms.ChoiceField(help_text="users holds every Samba user Tarn made; each user also has their own.")
    mode = forms.ChoiceField(choices=[(m, f"{m} — {what}") for m, what in FOLDER_MODES.items()], initial="2775")

    def __init__(self, *args, accounts: tuple[list[str], list[str]], **kwargs):
        super().__init__(*args, **kwargs)
        owners, groups = accounts
        self.fields["owner"].choices = [(o, o) for o in owners]
        self.fields["group"].choices = [(g, g) for g in groups]
