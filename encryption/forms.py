from django import forms

from appliance.fields import PassphraseRoundsField
from appliance.forms import ConfirmField
from encryption.choices import PASSPHRASE_MAX, Cipher, KeyFormat
from hostlib import zfs
from hostlib.names import PropertyErrors


def _check_typed(form: forms.Form, formats: dict[str, str], secret: str, field: str) -> None:
    """A secret typed for these roots ({name: keyformat}) is their key or an error on its field (zfs.typed_secret)."""
    try:
        zfs.typed_secret(formats, secret, field)
    except PropertyErrors as exc:
        for name, problem in exc.problems.items():
            form.add_error(name, problem)


class CreateForm(forms.Form):
    name = forms.CharField(max_length=255, help_text="pool/name: a new filesystem (or zvol) and encryption root.")
    volume_size = forms.CharField(required=False, help_text="For a zvol: its size (e.g. 10G). Empty: a filesystem.")
    cipher = forms.ChoiceField(choices=Cipher.choices, initial=Cipher.AES_256_GCM)
    keyformat = forms.ChoiceField(choices=KeyFormat.choices, initial=KeyFormat.PASSPHRASE, label="Key")
    passphrase = forms.CharField(
        required=False,
        max_length=PASSPHRASE_MAX,
        strip=False,
        widget=forms.PasswordInput,
        help_text="8 to 512 bytes. Four or more unrelated words are strong and easy to type.",
    )
    passphrase_confirm = forms.CharField(
        required=False, max_length=PASSPHRASE_MAX, strip=False, widget=forms.PasswordInput, label="Passphrase again"
    )
    pbkdf2iters = PassphraseRoundsField()
    escrow = forms.BooleanField(
        required=False,
        label="Keep the key in Tarn too (sealed), so Tarn can unlock it after a reboot",
        help_text="Hex or raw keys only: a passphrase is never stored.",
    )


class UnlockForm(forms.Form):
    roots = forms.MultipleChoiceField(choices=[], widget=forms.CheckboxSelectMultiple)
    secret = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput,
        label="Passphrase or hex key",
        help_text="A hex key is exactly 64 hex digits; typed, it is the key used (for the hex and raw roots too). "
        "Empty: each dataset's key file on the NAS or the key Tarn keeps.",
    )
    key_file = forms.FileField(required=False, label="Or a key export", help_text="A file Tarn exported (.age).")
    key_file_passphrase = forms.CharField(
        required=False, strip=False, widget=forms.PasswordInput, label="The export's passphrase"
    )
    dry_run = forms.BooleanField(required=False, label="Dry run: only check that the key fits")

    def __init__(self, *args, roots=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.formats = dict(roots or {})  # {root: its keyformat}
        self.fields["roots"].choices = [(r, r) for r in self.formats]

    def clean(self):
        data = super().clean()
        chosen = {r: self.formats[r] for r in data.get("roots") or [] if r in self.formats}
        _check_typed(self, chosen, data.get("secret") or "", "secret")
        return data


class LockForm(forms.Form):
    root = forms.CharField(max_length=255)
    force = forms.BooleanField(required=False, label="Force: close its SMB sessions and unmount even if busy")


class ChangeKeyForm(forms.Form):
    root = forms.ChoiceField(choices=[], label="Encryption root")
    confirm = ConfirmField(label="Its name again", help_text="Type the encryption root's name.")
    current_secret = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput,
        label="Current passphrase or key",
        help_text="Needed for a passphrase; a key on the NAS or kept by Tarn is checked by itself.",
    )
    inherit = forms.BooleanField(required=False, label="Inherit the parent's key instead (joins its encryption root)")
    keyformat = forms.ChoiceField(choices=KeyFormat.choices, initial=KeyFormat.PASSPHRASE, label="New key")
    new_passphrase = forms.CharField(required=False, max_length=PASSPHRASE_MAX, strip=False, widget=forms.PasswordInput)
    new_passphrase_confirm = forms.CharField(
        required=False, max_length=PASSPHRASE_MAX, strip=False, widget=forms.PasswordInput, label="New passphrase again"
    )
    pbkdf2iters = PassphraseRoundsField()
    escrow = forms.BooleanField(required=False, label="Keep the new key in Tarn too (sealed)")

    def __init__(self, *args, roots=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.formats = dict(roots or {})  # {root: its keyformat}
        self.fields["root"].choices = [(r, r) for r in self.formats]

    def clean(self):
        data = super().clean()
        root = data.get("root")
        if root in self.formats:
            _check_typed(self, {root: self.formats[root]}, data.get("current_secret") or "", "current_secret")
        return data


class ExportForm(forms.Form):
    roots = forms.MultipleChoiceField(choices=[], required=False, help_text="None ticked: every key of the host.")
    confirm = ConfirmField(label="Confirm", help_text="The dataset's name (one) or the host's name (several or all).")
    export_passphrase = forms.CharField(
        max_length=PASSPHRASE_MAX,
        strip=False,
        widget=forms.PasswordInput,
        help_text="The file is encrypted with it (age): keep it apart from the file.",
    )
    export_passphrase_confirm = forms.CharField(
        max_length=PASSPHRASE_MAX, strip=False, widget=forms.PasswordInput, label="Export passphrase again"
    )

    def __init__(self, *args, roots=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["roots"].choices = [(r, r) for r in roots]


class RetiredRemoveForm(forms.Form):
    confirm = ConfirmField(label="Type the dataset's name to remove its old key")
