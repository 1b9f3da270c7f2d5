"""Models for benchmarks (none yet)."""
