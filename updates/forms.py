"""The updates page's one form: the reboot, confirmed by the host's name."""

from django import forms

from appliance.forms import ConfirmField


class RebootForm(forms.Form):
    confirm = ConfirmField(max_length=40, label="Type the host's name to reboot it")
