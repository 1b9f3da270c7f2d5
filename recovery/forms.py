"""Recovery forms: which dataset, snapshot and folder a page shows (the GET query, checked as a form)."""

from django import forms

from appliance.fields import IntegerField
from appliance.forms import ConfirmField
from recovery.choices import VERSIONS_MOST, VERSIONS_PASS, How


class BrowseForm(forms.Form):
    dataset = forms.CharField(max_length=255, required=False)
    snapshot = forms.CharField(max_length=255, required=False)
    path = forms.CharField(max_length=4096 * 3, required=False, strip=False)
    page = IntegerField(min_value=1, max_value=10**6, required=False)


class VersionsForm(forms.Form):
    dataset = forms.CharField(max_length=255)
    path = forms.CharField(max_length=4096 * 3, strip=False)
    offset = IntegerField(min_value=0, max_value=10**7, required=False)
    limit = IntegerField(min_value=1, max_value=VERSIONS_MOST, required=False, initial=VERSIONS_PASS,
                         help_text=f"Snapshots a pass looks into (up to {VERSIONS_MOST}).")  # fmt: skip


class RestoreForm(forms.Form):
    dataset = forms.CharField(max_length=255, widget=forms.HiddenInput)
    snapshot = forms.CharField(max_length=255, widget=forms.HiddenInput)
    path = forms.CharField(max_length=4096 * 3, strip=False, widget=forms.HiddenInput)
    how = forms.ChoiceField(choices=How.choices, initial=How.BESIDE, widget=forms.RadioSelect, label="Restore")
    confirm = ConfirmField(
        required=False,
        label="Type its name to restore in place",
        help_text="In place replaces the live copy (a safety snapshot keeps it).",
    )


class ChangesForm(forms.Form):
    dataset = forms.CharField(max_length=255)
    since = forms.CharField(max_length=255, label="From snapshot")
    to = forms.CharField(max_length=255, required=False, label="To snapshot", help_text="Empty: now.")
    path = forms.CharField(max_length=4096 * 3, required=False, strip=False, widget=forms.HiddenInput)
    page = IntegerField(min_value=1, max_value=10**6, required=False)
