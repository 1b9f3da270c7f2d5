"""Native ZFS encryption: encryption roots, unlock and lock, key changes, key exports and retired keys."""
