"""Forms for alerts: shapes only (the services check a channel's rules and a rule's limits)."""

from django import forms

from analytics.choices import ChannelKind, Level
from analytics.models import Channel


class ChannelForm(forms.ModelForm):
    smtp_password = forms.CharField(required=False, widget=forms.PasswordInput, label="SMTP password",
                                    help_text="Empty keeps the saved one.")  # fmt: skip
    secret = forms.CharField(required=False, widget=forms.PasswordInput, label="Shared secret",
                             help_text="Signs each body (X-Tarn-Signature: sha256=HMAC). Empty keeps the saved one.")  # fmt: skip

    class Meta:
        model = Channel
        fields = ["name", "kind", "enabled", "min_level", "smtp_host", "smtp_port", "smtp_security", "smtp_username",
                  "smtp_password", "sender", "recipients", "url", "secret"]  # fmt: skip
        widgets = {"kind": forms.Select(choices=ChannelKind.choices)}


class RuleForm(forms.Form):
    key = forms.CharField(widget=forms.HiddenInput)
    enabled = forms.BooleanField(required=False)
    level = forms.ChoiceField(choices=Level.choices)
    threshold = forms.FloatField(required=False)
