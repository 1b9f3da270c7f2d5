"""Forms for disk health: a self-test to start."""

from django import forms

from appliance.choices import Every
from appliance.forms import SlotForm
from health.choices import SelfTestKind


class SelfTestForm(forms.Form):
    kind = forms.ChoiceField(
        choices=SelfTestKind.choices,
        initial=SelfTestKind.SHORT,
        help_text="The drive runs it by itself; the disk stays in use, a little slower. Its result joins the log.",
    )


class ScheduleForm(SlotForm):
    field_order = ["kind", "every", "weekday", "day", "hour"]
    kind = forms.ChoiceField(choices=SelfTestKind.choices, initial=SelfTestKind.LONG)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["every"].initial = Every.MONTH


class RunForm(forms.Form):
    kind = forms.ChoiceField(
        choices=SelfTestKind.choices,
        initial=SelfTestKind.SHORT,
        help_text="Every disk that can run it, one disk per vdev at a time; a pool scrubbing or resilvering waits.",
    )
