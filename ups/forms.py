"""The UPS form (shape only: hostlib.nut's rules run in the service)."""

from django import forms

from appliance.fields import IntegerField
from appliance.models import Host
from hostlib.nut import DRIVERS
from ups.choices import Mode, Policy


class UpsForm(forms.Form):
    name = forms.CharField(max_length=32, initial="ups", help_text="Letters, digits, _ and - (as NUT names it).")
    mode = forms.ChoiceField(choices=Mode.choices, initial=Mode.LOCAL, label="The UPS is")
    driver = forms.ChoiceField(choices=[("", "—")] + [(d, d) for d in DRIVERS], required=False,
                               help_text="usbhid-ups for most USB UPSes; dummy-ups plays a state file (tests).")  # fmt: skip
    port = forms.CharField(max_length=128, required=False, initial="auto",
                           help_text="auto for USB; a device (/dev/ttyS0) for a serial UPS.")  # fmt: skip
    listen = forms.CharField(max_length=255, required=False, label="Serve it to other NAS on",
                             help_text="This NAS's addresses, by spaces; empty: this NAS alone.")  # fmt: skip
    server_host = forms.ModelChoiceField(queryset=Host.objects.none(), required=False, label="Served by",
                                         help_text="Another NAS of Tarn's whose UPS is plugged in and served.")  # fmt: skip
    server = forms.CharField(max_length=253, required=False, label="…or the serving NAS's address")
    password = forms.CharField(max_length=64, required=False, widget=forms.PasswordInput, strip=False,
                               help_text="With an address: the password its admin gave for secondaries.")  # fmt: skip
    policy = forms.ChoiceField(choices=Policy.choices, initial=Policy.LOW_BATTERY, label="Shut down")
    seconds = IntegerField(required=False, min_value=0, max_value=86400, initial=0,
                           help_text="For the runtime floor or the time on battery.")  # fmt: skip

    def __init__(self, *args, host=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["server_host"].queryset = Host.objects.exclude(pk=getattr(host, "pk", None)).filter(
            ups__mode="local"
        )
