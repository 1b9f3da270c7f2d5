"""Replication: NAS-to-NAS pairs, replication tasks, their runs and failover."""
