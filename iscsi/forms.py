"""Forms for iSCSI: a target, a LUN, an initiator (shape only: hostlib.iscsi's rules run in the services)."""

from django import forms

from appliance.fields import IntegerField
from hostlib.iscsi import CHAP_MAX, MAX_LUNS, MAX_NAME, MAX_PORTALS
from iscsi.choices import ALL_PORTALS


class TargetForm(forms.Form):
    pk = IntegerField(required=False, widget=forms.HiddenInput)
    iqn = forms.CharField(
        label="Target name (IQN)", max_length=MAX_NAME,
        help_text="iqn.YYYY-MM.reversed.domain:name, e.g. iqn.2026-11.lan.office:nas1-vm (lower case is kept).",
    )  # fmt: skip
    portals = forms.CharField(
        label="Portals", initial=ALL_PORTALS, max_length=MAX_PORTALS * 50,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 40}),
        help_text="Where initiators connect, one a line: an address of this NAS, address:port or [IPv6]:port "
        "(3260, iSCSI's own, when none is given). 0.0.0.0 listens on all of them; two data networks: one address "
        "of each, for multipath.",
    )  # fmt: skip
    enabled = forms.BooleanField(label="Takes logins", required=False, initial=True)


class _TargetChoice(forms.Form):
    target = forms.TypedChoiceField(label="Target", coerce=int)

    def __init__(self, *args, targets=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = [(t.pk, t.iqn) for t in targets]


class LunForm(_TargetChoice):
    zvol = forms.ChoiceField(label="Zvol", help_text="Make zvols on a pool's page. A zvol is one LUN.")
    number = IntegerField(
        label="LUN number", required=False, min_value=0, max_value=MAX_LUNS - 1, help_text="Empty: the next free one."
    )
    write_back = forms.BooleanField(
        label="Write-back cache", required=False,
        help_text="Faster writes, but what the initiator was told is written can be lost if the NAS loses power. "
        "Leave it off unless the NAS is on a UPS.",
    )  # fmt: skip
    read_only = forms.BooleanField(label="Read-only", required=False)

    def __init__(self, *args, zvols=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["zvol"].choices = [(z, z) for z in zvols]


class InitiatorForm(_TargetChoice):
    iqn = forms.CharField(
        label="Initiator name", max_length=MAX_NAME,
        help_text="As the client shows it (Windows: iSCSI Initiator → Configuration; Linux: /etc/iscsi/initiatorname.iscsi).",
    )  # fmt: skip
    chap_user = forms.CharField(label="CHAP user", required=False, max_length=255)
    chap_secret = forms.CharField(
        label="CHAP secret", required=False, max_length=CHAP_MAX, widget=forms.PasswordInput, strip=False,
        help_text="12 to 16 characters. Either every initiator of a target has CHAP or none has.",
    )  # fmt: skip
    mutual_user = forms.CharField(label="Mutual CHAP user", required=False, max_length=255)
    mutual_secret = forms.CharField(
        label="Mutual CHAP secret", required=False, max_length=CHAP_MAX, widget=forms.PasswordInput, strip=False,
        help_text="The NAS proves itself to the initiator with this one: 12 to 16 characters, not the CHAP secret.",
    )  # fmt: skip
