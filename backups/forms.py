from django import forms

from appliance.fields import IntegerField
from appliance.forms import ConfirmField, SlotForm
from appliance.models import Host
from backups.choices import KEEP_DEFAULT, KEEP_MAX, MADE_ELSEWHERE, PASSPHRASE_MAX, PASSPHRASE_MIN

PASSPHRASE_HELP = (
    f"{PASSPHRASE_MIN} to {PASSPHRASE_MAX} characters; never stored. Without it the backup cannot be opened: keep it "
    "somewhere that does not die with this machine."
)


def _secret(label: str, help_text: str = "", required: bool = True) -> forms.CharField:
    return forms.CharField(
        label=label,
        required=required,
        max_length=PASSPHRASE_MAX,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=help_text,
    )


class BackupForm(forms.Form):
    passphrase = _secret("Passphrase", PASSPHRASE_HELP)
    passphrase_confirm = _secret("Passphrase again")
    include_series = forms.BooleanField(
        required=False, label="Include the analytics series", help_text="Larger; the charts' history comes back too."
    )


class ScheduleForm(SlotForm):
    kept_filled = True  # drawn for every request of its page: kept while its values are the same
    field_order = ["enabled", "every", "weekday", "day", "hour"]
    enabled = forms.BooleanField(required=False, label="On")
    keep = IntegerField(
        min_value=1, max_value=KEEP_MAX, initial=KEEP_DEFAULT, help_text="Backups kept here and on the NAS."
    )
    push_host = forms.ModelChoiceField(
        queryset=Host.objects.none(),
        required=False,
        label="Also keep a copy on",
        empty_label="(no NAS: only on this machine)",
        help_text="A NAS Tarn reaches over SSH; the copy goes to /var/lib/tarn-backups there (root only).",
    )
    include_series = forms.BooleanField(required=False, label="Include the analytics series")
    passphrase = _secret("Passphrase", "Set once (or to change it). " + PASSPHRASE_HELP, required=False)
    passphrase_confirm = _secret("Passphrase again", required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["hour"].initial = 1
        self.fields["push_host"].queryset = Host.objects.exclude(transport="local").order_by("name")


class UploadForm(forms.Form):
    file = forms.FileField(label="Backup file", help_text="A .tarnbackup file Tarn made (here or on another machine).")


class CheckForm(forms.Form):
    passphrase = _secret("The backup's passphrase")


class RestoreForm(forms.Form):
    passphrase = _secret("The backup's passphrase")
    confirm = ConfirmField(max_length=100, label="Type the backup's name to restore it")
    accept = forms.CharField(
        max_length=40,
        required=False,
        label=f"Made elsewhere: type “{MADE_ELSEWHERE}” to accept it",
        help_text="Only for a backup the dry run says this Tarn did not make (another machine, an older Tarn, or "
        "altered): anyone who knows the schedule's public key can seal a backup.",
    )


class DeleteForm(forms.Form):
    confirm = ConfirmField(max_length=100, label="Type the backup's name to delete it")
