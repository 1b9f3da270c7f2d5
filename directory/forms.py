"""Forms of the directory page: join a domain, leave it, search its users and groups. Shapes only: the rules (ids
against the host's accounts, one join per host) are the services'."""

import re

from django import forms

from appliance.forms import ConfirmField
from appliance.validators import refuse_bidi
from directory.choices import Backend, NameKind
from hostlib.directory import IdRange

RANGE = re.compile(r"\s*([0-9]{1,10})\s*-\s*([0-9]{1,10})\s*")


def _range(value: str, field: str) -> IdRange:
    match = RANGE.fullmatch(value or "")
    if not match:
        raise forms.ValidationError({field: "Two ids, low-high, such as 200000-2199999."})
    return IdRange(int(match.group(1)), int(match.group(2)))


class JoinForm(forms.Form):
    realm = forms.CharField(
        max_length=253, help_text="The domain's DNS name, such as AD.EXAMPLE.COM (its Kerberos realm)."
    )
    workgroup = forms.CharField(
        max_length=15, help_text="Its NetBIOS name, such as EXAMPLE: users are then written EXAMPLE\\alice."
    )
    dc = forms.CharField(
        label="Domain controller",
        max_length=253,
        required=False,
        help_text="Empty: found through DNS (this host's resolver must be the domain's DNS). Or a DC's name or address.",
    )
    backend = forms.ChoiceField(
        label="ID mapping", choices=Backend.choices, initial=Backend.RID, help_text="How domain accounts get Unix ids."
    )
    default_range = forms.CharField(
        initial="100000-199999", help_text="Ids for well-known and unmapped SIDs; above every local account's id."
    )
    domain_range = forms.CharField(
        initial="200000-2199999",
        help_text="The domain's ids (rid: range start + each account's RID). Never change it once files are owned.",
    )
    username = forms.CharField(
        label="Join account",
        max_length=20,
        initial="Administrator",
        help_text="A domain account allowed to add computers.",
    )
    password = forms.CharField(
        widget=forms.PasswordInput,
        max_length=127,
        strip=False,
        help_text="Used once for this join; Tarn keeps it nowhere.",
    )
    sessions_ok = forms.BooleanField(
        label="Join while users are connected",
        required=False,
        help_text="Open SMB sessions survive the join; new sign-ins then go through the domain.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        refuse_bidi(self.fields, "realm", "workgroup", "dc", "username")

    def clean(self):
        data = super().clean()
        for field in ("default_range", "domain_range"):
            if field in data:
                try:
                    data[field] = _range(data[field], field)
                except forms.ValidationError as exc:
                    self.add_error(None, exc)
        return data


class LeaveForm(forms.Form):
    username = forms.CharField(
        label="Domain account",
        max_length=20,
        required=False,
        help_text="One allowed to delete this computer's account.",
    )
    password = forms.CharField(widget=forms.PasswordInput, max_length=127, required=False, strip=False)
    local_only = forms.BooleanField(
        label="Only on this host",
        required=False,
        help_text="The DC is gone for good: forget the domain here; its computer account stays there.",
    )
    confirm = ConfirmField(label="Type the realm to confirm")


class NamesForm(forms.Form):
    kind = forms.ChoiceField(choices=NameKind.choices, required=False)
    q = forms.CharField(label="Search", max_length=80, required=False)
