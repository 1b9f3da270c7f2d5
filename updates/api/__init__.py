"""Updates: each host's pending packages (apt, simulated; security, kernel and ZFS marked), installed as an Operation once the guard held any kernel that would boot without its ZFS module."""
