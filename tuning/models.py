"""Models for tuning (none yet)."""
