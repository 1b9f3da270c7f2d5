"""Replication forms: shape only; the services check every value against both hosts."""

from django import forms

from appliance.fields import IntegerField
from appliance.models import Host
from replication.choices import KEEP_HOURS_MAX, KEEP_MAX, Direction, Transport
from replication.models import Pair


class PairForm(forms.Form):
    source = forms.ModelChoiceField(
        Host.objects.order_by("name"), to_field_name="name", help_text="The NAS that sends."
    )
    target = forms.ModelChoiceField(
        Host.objects.order_by("name"), to_field_name="name", help_text="The NAS that receives (may be the same one)."
    )
    direction = forms.ChoiceField(
        choices=Direction.choices,
        initial=Direction.PUSH,
        required=False,
        help_text="Pull when the backup NAS should hold the key: the source then can only be read from, and holds "
        "nothing that reaches its copies (a source taken over cannot delete its backups).",
    )
    address = forms.GenericIPAddressField(
        help_text="Push: the target's address as the source reaches it; pull: the source's as the target reaches "
        "it. A replication network if you have one."
    )
    port = IntegerField(min_value=1, max_value=65535, initial=22, help_text="That NAS's SSH port.")
    root = forms.CharField(
        max_length=255,
        strip=False,
        help_text="The dataset on the target the pair may receive into (and below), e.g. backup/nas1. It must exist.",
    )
    quota = forms.CharField(
        max_length=40,
        help_text="The most the pair may store on the target, e.g. 2T: set as the root's quota, so a paired NAS "
        "(or one taken over) cannot fill the target's pool.",
    )
    send_root = forms.CharField(
        max_length=255,
        required=False,
        strip=False,
        label="Send root (pull)",
        help_text="Pull only: the dataset on the source the pair may send (and below), e.g. tank.",
    )

    def clean_direction(self):
        return self.cleaned_data["direction"] or Direction.PUSH


class TaskForm(forms.Form):
    pair = forms.ModelChoiceField(Pair.objects.none())
    source_dataset = forms.CharField(
        max_length=255, strip=False, help_text="The dataset (or zvol) on the source, e.g. tank/docs."
    )
    recursive = forms.BooleanField(required=False, help_text="Its child datasets too.")
    excludes = forms.CharField(
        required=False, help_text="Children to leave out, below the source, comma-separated (e.g. scratch, vm/tmp)."
    )
    target_name = forms.CharField(max_length=255, strip=False, help_text="The replica's name below the pair's root.")
    pattern = forms.CharField(
        required=False,
        max_length=100,
        strip=False,
        help_text="Which snapshots go, by name (e.g. auto-* for a snapshot schedule's); empty sends all.",
    )
    limit = IntegerField(
        min_value=0, initial=0, label="Limit (MiB/s)", help_text="0 for no limit; held per second, not only on average."
    )
    keep = IntegerField(
        min_value=0,
        max_value=KEEP_MAX,
        initial=0,
        help_text="Snapshots the target keeps per dataset; 0 keeps every one. Counting alone is not safe against a "
        "source taken over (it can make snapshots to push the good ones out): the two rules below are.",
    )
    keep_hours = IntegerField(
        required=False,
        min_value=0,
        max_value=KEEP_HOURS_MAX,
        initial=24,
        label="Keep younger than (hours)",
        help_text="No snapshot younger than this is pruned, whatever keep says: set it to the time you need to "
        "notice an attack (a week: 168).",
    )
    prune_limit = IntegerField(
        required=False,
        min_value=1,
        max_value=KEEP_MAX,
        label="Prune at most",
        help_text="Snapshots per dataset and run; a run that brings more new ones than this holds pruning until "
        "you resume it (an alert says so). Empty: half of keep.",
    )
    transport = forms.ChoiceField(
        choices=Transport.choices,
        initial=Transport.SSH,
        required=False,
        help_text="tcp trades the stream's encryption and authentication on the wire for the CPU ssh's cipher "
        "costs: only on a link you trust (a raw stream of an encrypted dataset stays encrypted either way). "
        "The target must accept TCP from the source on any port.",
    )
    after_snapshots = forms.BooleanField(
        required=False, initial=True, help_text="Run once the source has a new matching snapshot (a schedule's)."
    )
    cron = forms.CharField(
        required=False,
        max_length=100,
        label="At (cron)",
        help_text="And/or at these times: minute hour day-of-month month day-of-week, e.g. 0 2 * * * (02:00 daily), "
        "30 */6 * * 1-5 (every six hours on weekdays); the server's time zone.",
    )
    every_minutes = IntegerField(
        required=False,
        min_value=0,
        initial=0,
        help_text="And/or run every this many minutes (5 or more); 0: not by the clock.",
    )

    def clean_transport(self):
        return self.cleaned_data["transport"] or Transport.SSH

    def __init__(self, *args, pairs=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pair"].queryset = pairs if pairs is not None else Pair.objects.none()

    def service_args(self) -> dict:
        d = dict(self.cleaned_data)
        d["excludes"] = [e.strip() for e in d["excludes"].split(",") if e.strip()]
        d["limit"] = d["limit"] << 20
        d["every_minutes"] = d["every_minutes"] or 0
        if d.get("keep_hours") is None:
            d["keep_hours"] = 24
        return d


class QuotaForm(forms.Form):
    quota = forms.CharField(max_length=40, help_text="e.g. 2T: the most the pair may store on the target.")


class RetentionForm(forms.Form):
    keep = TaskForm.base_fields["keep"]
    keep_hours = TaskForm.base_fields["keep_hours"]
    prune_limit = IntegerField(min_value=1, max_value=KEEP_MAX, label="Prune at most")


class RestoreForm(forms.Form):
    snapshot = forms.ChoiceField(help_text="A snapshot of the replica, as Tarn last read the target.")
    how = forms.ChoiceField(
        choices=[
            ("clone", "Clone it on the target, read-only (look, copy, share it from there)"),
            ("back", "Send it back into a new dataset on the source (needs a pair from the target to the source)"),
        ],
        initial="clone",
    )
    name = forms.CharField(
        max_length=255,
        help_text="clone: the new dataset on the target, in the replica's pool (e.g. backup/lab/docs-restored); "
        "back: one name below that pair's root on the source.",
    )

    def __init__(self, *args, snapshots=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["snapshot"].choices = [(s, s) for s in snapshots]
