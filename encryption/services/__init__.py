"""Writes for native encryption, by noun: make an encrypted dataset or zvol (create), unlock encryption roots (one or
many, with a dry run that checks every key before anything loads), lock one, change a key and remove an old one
(keys), export keys (exports). A passphrase or key travels only as the operation's split secret
(appliance.operations): never in its params, its messages, the audit log or Redis in clear; a hex or raw key is kept
on the NAS in a root-only key file and, if the admin chooses, escrowed sealed in Tarn. What other modules use is
here."""

from encryption.services.create import encrypted_create_run, encrypted_create_start
from encryption.services.exports import (
    EXPORT_FORMAT,
    EXPORT_KEPT,
    key_export_take,
    key_exports_prune,
    keys_export_run,
    keys_export_start,
    keys_from_export,
)
from encryption.services.keys import (
    change_key_run,
    change_key_start,
    retired_key_remove_run,
    retired_key_remove_start,
)
from encryption.services.lock import NFS_LET_GO, lock_plan, lock_run, lock_start
from encryption.services.unlock import unlock_run, unlock_start

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_KEPT",
    "NFS_LET_GO",
    "change_key_run",
    "change_key_start",
    "encrypted_create_run",
    "encrypted_create_start",
    "key_export_take",
    "key_exports_prune",
    "keys_export_run",
    "keys_export_start",
    "keys_from_export",
    "lock_plan",
    "lock_run",
    "lock_start",
    "retired_key_remove_run",
    "retired_key_remove_start",
    "unlock_run",
    "unlock_start",
]
