"""The replication app: snapshots sent NAS to NAS over a pair's own key."""

from django.apps import AppConfig


class ReplicationConfig(AppConfig):
    name = "replication"
