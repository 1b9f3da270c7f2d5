"""Models for pools (none yet)."""
