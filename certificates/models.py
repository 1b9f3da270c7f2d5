"""The certificates app keeps no rows: what the front serves is in the data dir's tls/ (appliance.tls.State)."""
