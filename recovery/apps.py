"""The recovery app: getting a file back from a snapshot. Browse any snapshot of a dataset one folder at a time
with the live folder beside it, and see the snapshots in which a file differs, read on the NAS through
.zfs/snapshot without following a link and with a bounded number of snapshots mounted at once."""

from django.apps import AppConfig


class RecoveryConfig(AppConfig):
    name = "recovery"
