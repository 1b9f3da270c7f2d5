"""Forms for disk health: a self-test to start."""

from django import forms

from health.choices import SelfTestKind


class SelfTestForm(forms.Form):
    kind = forms.ChoiceField(
        choices=SelfTestKind.choices,
        initial=SelfTestKind.SHORT,
        help_text="The drive runs it by itself; the disk stays in use, a little slower. Its result joins the log.",
    )
