"""Forms for tuning: shapes only (the services check against the host)."""

from django import forms

from appliance.fields import IntegerField
from appliance.forms import ConfirmField
from appliance.models import Host
from appliance.validators import no_bidi
from hostlib import net
from tuning.choices import (
    BOND_MIIMON_DEFAULT,
    JUMBO_MTU,
    KERNEL_KINDS,
    ROLLBACK_SECONDS_DEFAULT,
    ROLLBACK_SECONDS_MAX,
    ROLLBACK_SECONDS_MIN,
    BondMode,
    HashPolicy,
    LacpRate,
)
from tuning.profiles import DEFAULT_PROFILE, PROFILES

SECONDS_HELP = "If you do not press Keep within this time, the host itself puts the old settings back."


def _seconds():
    return IntegerField(
        initial=ROLLBACK_SECONDS_DEFAULT,
        min_value=ROLLBACK_SECONDS_MIN,
        max_value=ROLLBACK_SECONDS_MAX,
        label="Roll back after (s)",
        help_text=SECONDS_HELP,
    )


class PlanForm(forms.Form):
    profile = forms.ChoiceField(
        choices=[(p.key, p.title) for p in PROFILES.values()], initial=DEFAULT_PROFILE, widget=forms.RadioSelect
    )


class ApplyForm(forms.Form):
    measure = forms.BooleanField(
        required=False,
        initial=True,
        label="Measure the effect",
        help_text="iperf3 both ways between another host and this one, before and after.",
    )
    peer = forms.ModelChoiceField(queryset=Host.objects.none(), required=False, label="Measure from")
    address = forms.ChoiceField(choices=[], required=False, label="To this host's address")
    revert_if_worse = forms.BooleanField(
        required=False, label="Revert by itself if slower", help_text="If throughput after is 5% or more below before."
    )

    def __init__(self, *args, peers=None, addresses=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["peer"].queryset = peers if peers is not None else Host.objects.none()
        self.fields["peer"].initial = self.fields["peer"].queryset.first()
        self.fields["address"].choices = list(addresses)


class SettingForm(forms.Form):
    kind = forms.ChoiceField(choices=KERNEL_KINDS, initial="sysctl")
    key = forms.CharField(max_length=100, help_text="e.g. net.core.rmem_max, or a ZFS parameter like zfs_txg_timeout")
    value = forms.CharField(
        max_length=200, help_text="Numbers separated by spaces (tcp_rmem: min default max), or a word"
    )
    reason = forms.CharField(
        max_length=300,
        required=False,
        label="Why",
        validators=[no_bidi],
        help_text="Why: shown beside the setting and in the audit",
    )
    confirm = ConfirmField(
        max_length=100,
        required=False,
        label="Confirm",
        help_text="Only for a ZFS parameter that risks data (zil_replay_disable, zfs_nocacheflush …): its name again",
    )


class MtuForm(forms.Form):
    link = forms.CharField(max_length=15, strip=False)  # exactly the kernel's name: the service refuses "eth1 "
    mtu = IntegerField(min_value=68, max_value=65535, initial=JUMBO_MTU, label="MTU")
    peers = forms.CharField(
        required=False,
        max_length=500,
        label="Must reach (DF ping)",
        help_text="Addresses that must answer a full-size unfragmented ping before the MTU may stay; space-separated.",
    )
    seconds = _seconds()

    def clean_peers(self):
        words = self.cleaned_data["peers"].split()
        if len(words) > 16:
            raise forms.ValidationError("Up to 16 addresses.")
        try:
            return [net.check_address(w) for w in words]
        except ValueError as exc:
            raise forms.ValidationError(f"IP addresses only, separated by spaces: {exc}.") from None


class BridgeForm(forms.Form):
    name = forms.CharField(max_length=15, initial="br0", strip=False)
    ports = forms.MultipleChoiceField(choices=[], widget=forms.CheckboxSelectMultiple)
    management_ok = forms.BooleanField(
        required=False,
        label="Yes, bridge the management link",
        help_text="The link Tarn or your browser reach this host through: it moves to the bridge.",
    )
    seconds = _seconds()

    def __init__(self, *args, nics=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["ports"].choices = [(n, n) for n in nics]


class BondForm(forms.Form):
    name = forms.CharField(max_length=15, initial="bond0", strip=False)
    ports = forms.MultipleChoiceField(choices=[], widget=forms.CheckboxSelectMultiple)
    mode = forms.ChoiceField(choices=BondMode.choices, initial=BondMode.ACTIVE_BACKUP)
    miimon = IntegerField(
        min_value=net.MIIMON_MIN,
        max_value=net.MIIMON_MAX,
        initial=BOND_MIIMON_DEFAULT,
        label="Link check every (ms)",
        help_text="How soon a dead port is noticed: at most this long of traffic is lost when one fails.",
    )
    lacp_rate = forms.ChoiceField(choices=LacpRate.choices, required=False, label="LACP rate (802.3ad only)")
    xmit_hash_policy = forms.ChoiceField(choices=HashPolicy.choices, required=False, label="Hash policy (802.3ad only)")
    seconds = _seconds()

    def __init__(self, *args, nics=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["ports"].choices = [(n, n) for n in nics]

    def option_fields(self):
        """The fields below the ports on the page (name and ports are laid out by hand)."""
        return [self[name] for name in ("mode", "miimon", "lacp_rate", "xmit_hash_policy", "seconds")]


class VlanForm(forms.Form):
    link = forms.CharField(max_length=15, strip=False, label="On link")
    vid = IntegerField(min_value=net.VLAN_ID_MIN, max_value=net.VLAN_ID_MAX, label="VLAN id")
    name = forms.CharField(
        max_length=15, required=False, strip=False, help_text="Empty: the link's name, a dot and the id (eth1.42)."
    )
    addresses = forms.CharField(
        required=False,
        max_length=500,
        help_text="The VLAN's own addresses with their prefix (192.0.2.10/24), space-separated; none is fine.",
    )
    seconds = _seconds()

    def clean_addresses(self):
        words = self.cleaned_data["addresses"].split()
        if len(words) > 16:
            raise forms.ValidationError("Up to 16 addresses.")
        try:
            return [net.check_cidr(w) for w in words]
        except ValueError as exc:
            raise forms.ValidationError(f"{exc}.") from None

    def option_fields(self):
        """The fields below the link on the page (a select laid out by hand)."""
        return [self[name] for name in ("vid", "name", "addresses", "seconds")]


class LinkDeleteForm(forms.Form):
    """A bridge's, bond's or VLAN's delete button: its name typed again."""

    name = forms.CharField(max_length=15, strip=False)
    confirm = ConfirmField(max_length=15, label="Confirm")
    seconds = _seconds()
