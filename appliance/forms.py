"""Forms for the appliance app: shape checks that name the field; rules live in services."""

import ipaddress
import re

from django import forms
from django.contrib.auth.forms import AuthenticationForm

from appliance.choices import AuditKind, Every, Role
from appliance.fields import IntegerField, WeekdayField
from appliance.validators import no_bidi
from hostlib.runner import parse_host_keys

_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_HOST_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_UNIX_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")


class ConfirmField(forms.CharField):
    """The object's name typed again before a destructive step: taken exactly as typed (never trimmed, as names are
    not); the service compares it with the name and says what to type (appliance.checks.confirmed)."""

    def __init__(self, *, label: str = "Type its name to confirm", max_length: int = 255, **kwargs):
        super().__init__(label=label, max_length=max_length, strip=False, **kwargs)


class LoginForm(AuthenticationForm):
    error_messages = {
        "invalid_login": "Wrong username or password.",
        "inactive": "Wrong username or password.",
    }


class CodeForm(forms.Form):
    """A second factor typed: 6 digits from an authenticator app, or a recovery code. Named otp_token so the audit
    masks it; its shape is checked by appliance.twofactor.clean_code (ASCII digits only)."""

    otp_token = forms.CharField(
        max_length=40,
        label="Code",
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "autofocus": True}),
        help_text="6 digits from your authenticator app, or one of your recovery codes (xxxxx-xxxxx).",
    )


class PasskeyLoginForm(forms.Form):
    passkey_login = forms.BooleanField(required=False, label="Let me sign in with a passkey alone (no password)")
    password = forms.CharField(
        required=False,
        strip=False,
        max_length=4096,
        label="Your password",
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
        help_text="Needed to switch it on.",
    )


class PasswordForm(forms.Form):
    """The password typed again: how a user without a second factor confirms a secret step."""

    password = forms.CharField(
        strip=False,
        max_length=4096,
        label="Your password",
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password", "autofocus": True}),
        help_text="You have no second factor: your password confirms it is you.",
    )


class PolicyForm(forms.Form):
    required_roles = forms.MultipleChoiceField(
        choices=Role.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Require a second factor for",
        help_text="Users of these roles are sent to set one up at their next page; API tokens are not affected.",
    )


class ResetForm(forms.Form):
    confirm = ConfirmField(max_length=150, label="Type the user's name to reset their second factor")


def validate_address(value: str) -> str:
    value = value.strip()
    if "%" in value:
        raise forms.ValidationError(
            "Enter the address without an IPv6 zone (%…): a global or unique-local address, or a hostname."
        )
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if not _HOSTNAME.match(value):
        raise forms.ValidationError("Enter a hostname or an IP address (letters, digits, dots and dashes).")
    return value


class HostForm(forms.Form):
    name = forms.CharField(max_length=40, help_text="Lowercase letters, digits and dashes; e.g. nas1.")
    address = forms.CharField(max_length=253, help_text="Hostname or IP address of the NAS.")
    port = IntegerField(min_value=1, max_value=65535, initial=22)
    username = forms.CharField(max_length=32, initial="root")
    identity_file = forms.CharField(
        max_length=255,
        required=False,
        help_text="Path on this machine to a private key; leave empty to use Tarn's own key (shown below).",
    )
    host_keys = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="The NAS's SSH host key ('ssh-ed25519 AAAA…'). Empty: read it now and pin it.",
    )
    read_only = forms.BooleanField(required=False, help_text="Only look; refuse every change on this host.")

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not _HOST_NAME.match(name):
            raise forms.ValidationError("Use lowercase letters, digits and dashes, starting with a letter or digit.")
        return name

    def clean_address(self):
        return validate_address(self.cleaned_data["address"])

    def clean_username(self):
        username = self.cleaned_data["username"].strip()
        if not _UNIX_USER.match(username):
            raise forms.ValidationError("Not a valid Unix user name.")
        return username

    def clean_identity_file(self):
        # Only its shape here: the key is readable by the workers (root), not by the web; the probe checks it.
        path = self.cleaned_data["identity_file"].strip()
        if path and (not path.startswith("/") or "/../" in f"{path}/" or not path.isprintable()):
            raise forms.ValidationError("An absolute path to an SSH private key, e.g. /root/.ssh/id_ed25519.")
        return path

    def clean_host_keys(self):
        text = self.cleaned_data["host_keys"].strip()
        if not text:
            return []
        try:
            return parse_host_keys(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=80, validators=[no_bidi], help_text="What uses it, e.g. 'monitoring'.")


class AuditFilterForm(forms.Form):
    kind = forms.ChoiceField(choices=[("", "All")] + AuditKind.choices, required=False)
    user = forms.CharField(required=False, max_length=150)
    host = forms.CharField(required=False, max_length=40)
    q = forms.CharField(required=False, max_length=200, label="Contains")
    since = forms.DateTimeField(required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    until = forms.DateTimeField(required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))


class SlotForm(forms.Form):
    """A calendar slot's fields (appliance.schedules), for every schedule that runs at one: how often, the day of the
    week by its name, the day of the month, the hour."""

    every = forms.ChoiceField(choices=Every.choices, initial=Every.DAY)
    weekday = WeekdayField(help_text="For a weekly schedule.")
    day = IntegerField(min_value=1, max_value=28, initial=1, help_text="Day of the month (1-28), for a monthly one.")
    hour = IntegerField(min_value=0, max_value=23, initial=2, help_text="Hour of the day (the server's time zone).")
