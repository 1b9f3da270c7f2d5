"""The updates app has no form: its buttons post nothing but the current host (its views)."""
