"""Files inside snapshots: one folder of a snapshot (the live folder compared) and a file's versions across snapshots."""
