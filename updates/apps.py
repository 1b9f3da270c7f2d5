"""The updates app: each host's pending packages (apt, simulated), applied as an Operation, with the guard that
holds a kernel that would boot without its ZFS module (hostlib.updates)."""

from django.apps import AppConfig


class UpdatesConfig(AppConfig):
    name = "updates"
