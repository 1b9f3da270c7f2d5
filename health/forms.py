"""Forms for disk health: a self-test to start."""

from django import forms

from appliance.fields import IntegerField
from health.choices import Every, SelfTestKind


class SelfTestForm(forms.Form):
    kind = forms.ChoiceField(
        choices=SelfTestKind.choices,
        initial=SelfTestKind.SHORT,
        help_text="The drive runs it by itself; the disk stays in use, a little slower. Its result joins the log.",
    )


WEEKDAYS = [
    (0, "Monday"),
    (1, "Tuesday"),
    (2, "Wednesday"),
    (3, "Thursday"),
    (4, "Friday"),
    (5, "Saturday"),
    (6, "Sunday"),
]


class ScheduleForm(forms.Form):
    kind = forms.ChoiceField(choices=SelfTestKind.choices, initial=SelfTestKind.LONG)
    every = forms.ChoiceField(choices=Every.choices, initial=Every.MONTH)
    weekday = forms.TypedChoiceField(choices=WEEKDAYS, coerce=int, initial=6, help_text="For a weekly schedule.")
    day = IntegerField(min_value=1, max_value=28, initial=1, help_text="Day of the month, for a monthly schedule.")
    hour = IntegerField(min_value=0, max_value=23, initial=2, help_text="Hour of the day (the server's time zone).")


class RunForm(forms.Form):
    kind = forms.ChoiceField(
        choices=SelfTestKind.choices,
        initial=SelfTestKind.SHORT,
        help_text="Every disk that can run it, one disk per vdev at a time; a pool scrubbing or resilvering waits.",
    )
