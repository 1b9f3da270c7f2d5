"""The audit log: every mutating request (here) and every mutating host command (appliance.connect)."""
