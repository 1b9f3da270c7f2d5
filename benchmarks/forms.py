"""Forms for benchmarks: shapes only (the service checks the target and the free space)."""

from django import forms

from appliance.host.fio import SIZE
from benchmarks.profiles import BUILT_IN


class RunForm(forms.Form):
    profile = forms.ChoiceField(choices=[(p.key, p.title) for p in BUILT_IN if p.jobs])
    dataset = forms.ChoiceField(choices=[], help_text="Tarn makes a scratch dataset under it and removes it after.")
    size = forms.CharField(
        required=False, max_length=8, help_text="Per job, e.g. 4g. Empty: the profile's. Bigger than the ARC "
        "(twice its maximum) or the result measures RAM.",
    )  # fmt: skip
    runtime = forms.IntegerField(required=False, min_value=1, max_value=86400, help_text="Seconds per job.")

    def __init__(self, *args, datasets=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset"].choices = [(d, d) for d in datasets]

    def clean_size(self):
        size = self.cleaned_data["size"].strip().lower()
        if size and not SIZE.fullmatch(size):
            raise forms.ValidationError("A size like 512m or 4g.")
        return size

    def clean_runtime(self):
        return self.cleaned_data["runtime"] or 0
