"""Capacity forms: the forecast list's filter (a search and which kind of row)."""

from django import forms

KINDS = [("", "Pools and datasets"), ("pools", "Pools"), ("datasets", "Datasets")]


class ForecastFilterForm(forms.Form):
    kind = forms.ChoiceField(choices=KINDS, required=False, label="Show")
    q = forms.CharField(max_length=255, required=False, strip=True, label="Search",
                        widget=forms.TextInput(attrs={"placeholder": "tank/data"}))  # fmt: skip
