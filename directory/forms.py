"""Forms of the directory page: join a domain, leave it, read an LDAP directory, remove it, search the users and
groups. Shapes only: the rules (ids against the host's accounts, one directory per host, the LDAP fields) are the
services'."""

import re

from django import forms

from appliance.choices import AccountKind
from appliance.forms import ConfirmField
from appliance.validators import refuse_bidi
from directory.choices import Backend, LdapSchema, LdapTls
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


class LdapForm(forms.Form):
    uri = forms.CharField(
        label="Server URI",
        max_length=300,
        help_text="ldap://ldap.example.com (StartTLS) or ldaps://ldap.example.com; a port after a colon if not the usual.",
    )
    tls = forms.ChoiceField(
        label="TLS",
        choices=LdapTls.choices,
        initial=LdapTls.STARTTLS,
        help_text="StartTLS upgrades a plain connection (port 389 unless the URI says otherwise); ldaps:// is 636.",
    )
    base_dn = forms.CharField(
        label="Base DN", max_length=1000, help_text="Where users and groups are searched, such as dc=example,dc=com."
    )
    bind_dn = forms.CharField(
        label="Bind DN",
        max_length=1000,
        required=False,
        help_text="A read-only account such as cn=nas,ou=services,dc=example,dc=com; empty: search anonymously.",
    )
    bind_password = forms.CharField(
        widget=forms.PasswordInput,
        max_length=256,
        required=False,
        strip=False,
        help_text="The bind DN's. Written to the host for sssd (root's, 0600); Tarn keeps no copy.",
    )
    schema = forms.ChoiceField(choices=LdapSchema.choices, initial=LdapSchema.RFC2307)
    ca_pem = forms.CharField(
        label="CA certificate",
        max_length=64_000,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6, "class": "mono", "placeholder": "-----BEGIN CERTIFICATE-----"}),
        help_text="The PEM of the CA that signed the server's certificate (the server's own, if self-signed).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        refuse_bidi(self.fields, "uri", "base_dn", "bind_dn")


class LdapRemoveForm(forms.Form):
    confirm = ConfirmField(label="Type the server URI to confirm")


class NamesForm(forms.Form):
    kind = forms.ChoiceField(choices=AccountKind.choices, required=False)
    q = forms.CharField(label="Search", max_length=80, required=False)
