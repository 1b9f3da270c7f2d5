from django import forms

from encryption.choices import PASSPHRASE_MAX, Cipher, KeyFormat


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
        help_text="Empty: each dataset's key file on the NAS or the key Tarn keeps.",
    )
    dry_run = forms.BooleanField(required=False, label="Dry run: only check that the key fits")

    def __init__(self, *args, roots=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["roots"].choices = [(r, r) for r in roots]


class LockForm(forms.Form):
    root = forms.CharField(max_length=255)
    force = forms.BooleanField(required=False, label="Force: close its SMB sessions and unmount even if busy")
