"""Alert tests deliver to real receivers."""

from tests.support.receivers import receiver, smtp  # noqa: F401
