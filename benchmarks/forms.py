"""Forms for benchmarks: shapes only (the services check targets, free space, the ARC and cron fields)."""

from django import forms

from appliance.fields import IntegerField
from appliance.validators import no_bidi
from benchmarks.choices import PROPERTIES, SCHEDULE_MINUTE_HELP, SCHEDULES_ENABLED_MAX
from benchmarks.profiles import BUILT_IN
from hostlib.fio import ENGINES, RW, SIZE

STORAGE = [(p.key, p.title) for p in BUILT_IN if p.jobs]
NETWORK = [(p.key, p.title) for p in BUILT_IN if p.network]
CACHE_HELP = "Run although the working set fits in the ARC: the result then measures RAM (the cache), not disks."


class SizedRun(forms.Form):
    dataset = forms.ChoiceField(choices=[], help_text="Tarn makes a scratch dataset under it and removes it after.")
    size = forms.CharField(
        required=False,
        max_length=8,
        help_text="Per job, e.g. 4g. Empty: the profile's. At least twice the ARC's "
        "maximum, or the result measures RAM.",
    )
    runtime = IntegerField(required=False, min_value=1, max_value=86400, help_text="Seconds per job.")
    cache_ok = forms.BooleanField(required=False, label="Measure the cache", help_text=CACHE_HELP)

    def __init__(self, *args, datasets=(), profiles=STORAGE, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset"].choices = [(d, d) for d in datasets]
        for name in ("profile", "profiles"):
            if name in self.fields:
                self.fields[name].choices = list(profiles)  # built in, then the admins' copies

    def clean_size(self):
        size = self.cleaned_data["size"].strip().lower()
        if size and not SIZE.fullmatch(size):
            raise forms.ValidationError("A size like 512m or 4g.")
        return size

    def clean_runtime(self):
        return self.cleaned_data["runtime"] or 0


class RunForm(SizedRun):
    """dataset is replaced by target: a dataset, or a share mounted over loopback (its value says which)."""

    profile = forms.ChoiceField(choices=STORAGE)
    target = forms.ChoiceField(
        choices=[],
        help_text="A dataset: Tarn makes a scratch dataset under it. A share: "
        "Tarn mounts it on the NAS itself over SMB3 or NFSv3 and writes in a scratch folder.",
    )
    field_order = ["profile", "target", "size", "runtime", "cache_ok"]

    def __init__(self, *args, datasets=(), shares=(), **kwargs):
        super().__init__(*args, datasets=datasets, **kwargs)
        del self.fields["dataset"]
        self.fields["target"].choices = [("Datasets", [(f"dataset:{d}", d) for d in datasets])] + (
            [("Shares (over loopback)", list(shares))] if shares else []
        )

    def clean_target(self):
        kind, _, name = self.cleaned_data["target"].partition(":")
        return {"kind": kind, "name": name}


class SuiteForm(SizedRun):
    profiles = forms.MultipleChoiceField(choices=STORAGE, widget=forms.CheckboxSelectMultiple)
    prop = forms.ChoiceField(
        choices=[("", "(none: just these profiles)")] + [(p, p) for p in PROPERTIES],
        required=False,
        label="Sweep property",
    )
    values = forms.CharField(required=False, max_length=200, help_text="Comma-separated, e.g. standard,always.")
    field_order = ["profiles", "prop", "values", "dataset", "size", "runtime", "cache_ok"]

    def clean_values(self):
        return [v.strip() for v in self.cleaned_data["values"].split(",") if v.strip()]

    def clean(self):
        data = super().clean()
        prop, values = data.get("prop"), data.get("values") or []
        if prop:
            wrong = [v for v in values if v not in PROPERTIES[prop]]
            if wrong or len(values) < 2:
                self.add_error("values", f"Two or more of {', '.join(PROPERTIES[prop])}.")
        return data


class NetworkForm(forms.Form):
    profile = forms.ChoiceField(choices=NETWORK)
    peer = forms.ChoiceField(
        choices=[], help_text="Where iperf3's client runs: another host Tarn manages, or this machine."
    )
    address = forms.ChoiceField(
        choices=[],
        help_text="The NAS's address the client reaches: a data link's says more "
        "about clients than the management link's.",
    )
    runtime = IntegerField(required=False, min_value=1, max_value=300, help_text="Seconds per direction.")

    def __init__(self, *args, peers=(), addresses=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["peer"].choices = list(peers)  # (host id, name)
        self.fields["address"].choices = [(a, a) for a in addresses]

    def clean_runtime(self):
        return self.cleaned_data["runtime"] or 0


class ScheduleForm(SizedRun):
    name = forms.CharField(max_length=80, validators=[no_bidi])
    profiles = forms.MultipleChoiceField(choices=STORAGE, widget=forms.CheckboxSelectMultiple)
    minute = forms.CharField(max_length=60, initial="0", help_text=SCHEDULE_MINUTE_HELP)
    hour = forms.CharField(max_length=60, initial="3", help_text="Cron fields: numbers, *, 1-5, */6, 0,12.")
    day_of_week = forms.CharField(max_length=60, initial="0", help_text="0 is Sunday; * every day.")
    drop_percent = IntegerField(
        min_value=1,
        max_value=90,
        initial=10,
        label="Flag a drop beyond (%)",
        help_text="Against the median of the same profile's previous 5 scheduled runs.",
    )
    enabled = forms.BooleanField(
        required=False, initial=True, help_text=f"At most {SCHEDULES_ENABLED_MAX} enabled schedules per host."
    )
    field_order = [
        "name",
        "profiles",
        "dataset",
        "size",
        "runtime",
        "cache_ok",
        "minute",
        "hour",
        "day_of_week",
        "drop_percent",
        "enabled",
    ]


class ProfileForm(forms.Form):
    """A copy of a profile: its first job's fields (prefilled with the original's) and the dataset's properties."""

    title = forms.CharField(max_length=80, validators=[no_bidi])
    represents = forms.CharField(
        max_length=200, required=False, validators=[no_bidi], help_text="What load this stands for."
    )
    rw = forms.ChoiceField(choices=[(x, x) for x in RW], label="Pattern")
    bs = forms.CharField(max_length=8, label="Block size", help_text="4k, 128k, 1m…")
    size = forms.CharField(max_length=8, help_text="Per process: at least twice the ARC's maximum for disk figures.")
    runtime = IntegerField(min_value=1, max_value=86400, help_text="Seconds.")
    ramp = IntegerField(min_value=0, max_value=3600, help_text="Seconds not counted at the start.")
    numjobs = IntegerField(min_value=1, max_value=64, label="Processes")
    iodepth = IntegerField(
        min_value=1,
        max_value=256,
        label="Queue depth",
        help_text="Above 1 only with libaio or io_uring: psync runs at depth 1.",
    )
    ioengine = forms.ChoiceField(choices=[(x, x) for x in ENGINES], label="Engine")
    rwmixread = IntegerField(
        min_value=0, max_value=100, required=False, label="Read share (%)", help_text="Mixed patterns only."
    )
    nrfiles = IntegerField(min_value=1, max_value=10000, label="Files per process")
    sync = forms.BooleanField(required=False, label="O_SYNC writes", help_text="As NFS, ESXi and databases write.")
    direct = forms.BooleanField(required=False, label="O_DIRECT", help_text="Honoured by OpenZFS from 2.3.")
    end_fsync = forms.BooleanField(required=False, label="fsync at the end", help_text="Counts the dirty data.")
    recordsize = forms.ChoiceField(
        choices=[("", "(the dataset's)")] + [(v, v) for v in PROPERTIES["recordsize"]], required=False
    )
    dataset_sync = forms.ChoiceField(
        choices=[("", "(the dataset's)")] + [(v, v) for v in PROPERTIES["sync"]], required=False, label="Dataset sync"
    )
    JOB = (
        "rw",
        "bs",
        "size",
        "runtime",
        "ramp",
        "numjobs",
        "iodepth",
        "ioengine",
        "rwmixread",
        "nrfiles",
        "sync",
        "direct",
        "end_fsync",
    )

    def split(self) -> dict:
        """cleaned_data as profile_copy's arguments."""
        data = self.cleaned_data
        properties = {k: data[f] for k, f in (("recordsize", "recordsize"), ("sync", "dataset_sync")) if data[f]}
        return {
            "title": data["title"],
            "represents": data["represents"],
            "properties": properties,
            "job": {k: data[k] for k in self.JOB},
        }
