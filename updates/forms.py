"""The updates page's forms: the reboot, confirmed by the host's name; the roll-out's hosts."""

from django import forms

from appliance.forms import ConfirmField
from appliance.models import Host


class RebootForm(forms.Form):
    confirm = ConfirmField(max_length=40, label="Type the host's name to reboot it")


class RolloutForm(forms.Form):
    hosts = forms.ModelMultipleChoiceField(
        queryset=Host.objects.order_by("name"),
        widget=forms.CheckboxSelectMultiple,
        help_text="Updated one at a time in this order; the first is the canary: its failure stops the rest.",
    )
