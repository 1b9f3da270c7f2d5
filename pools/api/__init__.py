"""Storage: pools and their vdevs, disks, datasets and zvols, snapshots, snapshot and scrub schedules, pool import."""
