"""Forms for analytics and alerts: shapes only (the services check a channel's rules and a rule's limits)."""

from django import forms

from analytics.choices import CHARTS, RANGES, ChannelKind, Level
from analytics.models import Channel
from appliance.fields import FloatField, IntegerField, model_formfield
from appliance.validators import refuse_bidi


class ChannelForm(forms.ModelForm):
    smtp_password = forms.CharField(
        required=False,
        widget=forms.PasswordInput,
        label="SMTP password",
        help_text="Empty keeps the saved one while the server and user stay the same; change them and enter it again.",
    )
    secret = forms.CharField(
        required=False,
        widget=forms.PasswordInput,
        label="Shared secret",
        help_text="Signs each delivery (X-Tarn-Signature: sha256=HMAC of X-Tarn-Timestamp, a dot and the body). "
        "Empty keeps the saved one.",
    )

    class Meta:
        formfield_callback = model_formfield
        model = Channel
        fields = [
            "name",
            "kind",
            "enabled",
            "min_level",
            "smtp_host",
            "smtp_port",
            "smtp_security",
            "smtp_username",
            "smtp_password",
            "sender",
            "recipients",
            "url",
            "allow_private",
            "secret",
        ]
        widgets = {"kind": forms.Select(choices=ChannelKind.choices)}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        refuse_bidi(self.fields, "name")


class RuleForm(forms.Form):
    key = forms.CharField(widget=forms.HiddenInput)
    enabled = forms.BooleanField(required=False)
    level = forms.ChoiceField(choices=Level.choices)
    threshold = FloatField(required=False)


class SamplerForm(forms.Form):
    kept_filled = True  # drawn for every request of its page: kept while its values are the same
    interval = IntegerField(
        label="Sample every (s)",
        help_text="5–300 s. Each sample is one command on the NAS; its cost is shown below the charts.",
    )
    raw_hours = IntegerField(
        label="Keep every sample (h)", help_text="1–168 h; older samples remain as 5-minute and hourly averages."
    )
    rollup_days = IntegerField(label="Keep averages (days)", help_text="1–365 days.")


class AnalyticsQuery(forms.Form):
    """The page's query string: which range, and which chart to break down by what."""

    range = forms.ChoiceField(choices=[(r.key, r.title) for r in RANGES.values()], required=False)
    chart = forms.ChoiceField(choices=[(c.key, c.title) for c in CHARTS.values()], required=False)
    by = forms.CharField(required=False, max_length=20)

    def clean(self):
        data = super().clean()
        chart = CHARTS.get(data.get("chart") or "")
        if data.get("by") and (chart is None or data["by"] not in dict(chart.breakdowns)):
            raise forms.ValidationError({"by": "Not a breakdown of this chart."})
        data["range"] = RANGES[data.get("range") or "1h"]
        data["chart"], data["by"] = data.get("chart") or None, data.get("by") or None
        return data
