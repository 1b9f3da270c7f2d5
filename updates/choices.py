"""The updates app's limits."""

APPLY_SECONDS = 3 * 3600  # an upgrade's time limit (a kernel's DKMS build under emulation takes minutes)
POLL_SECONDS = 2.0  # how often the unit's state and log are read while it runs
LOG_LINES = 400  # the end of apt's log kept in the operation's log (the whole file stays on the host)
BOOT_SECONDS = 900  # how long a rebooted host may take to answer again
UNKNOWN_MAX = 60  # polls in a row systemd does not say how the unit is (or the host does not answer) before giving up
