"""Writes for tuning. Every change is a ChangeSet (revertible, with each setting's original value) applied by an
Operation: inventory (links, kernel values), settings (plan → apply → measure → revert, drift) and network (MTU
bridges, bonds and VLANs with the restore armed on the host). Importing this package registers their runners."""

from tuning.services.inventory import (
    kernel_refresh,
    links_refresh,
    tuning_refresh,
    tuning_refresh_schedule,
    tuning_refresh_start,
)
from tuning.services.links import (
    bond_create_start,
    bond_delete_start,
    bridge_create_start,
    bridge_delete_start,
    link_mtu_start,
    network_revert_start,
    vlan_create_start,
    vlan_delete_start,
)
from tuning.services.network import change_keep_start, changes_settle
from tuning.services.settings import (
    drift_start,
    setting_start,
    tuning_apply_start,
    tuning_plan_start,
    tuning_revert_start,
)


def change_revert_start(*, change_set, user):
    """Revert a change set: its settings' original values, or a kept network change undone (armed again)."""
    if change_set.is_network:
        return network_revert_start(change_set=change_set, user=user)
    return tuning_revert_start(host=change_set.host, user=user, change_set=change_set)


__all__ = [
    "change_revert_start",
    "bond_create_start",
    "bond_delete_start",
    "bridge_create_start",
    "bridge_delete_start",
    "change_keep_start",
    "changes_settle",
    "drift_start",
    "kernel_refresh",
    "link_mtu_start",
    "links_refresh",
    "network_revert_start",
    "setting_start",
    "tuning_apply_start",
    "tuning_plan_start",
    "tuning_refresh",
    "tuning_refresh_schedule",
    "tuning_refresh_start",
    "tuning_revert_start",
    "vlan_create_start",
    "vlan_delete_start",
]
