"""The lab tier uses the shared lab fixtures (and the alert receivers)."""

from tests.support.lab_fixtures import guest, lab, lab_host  # noqa: F401
from tests.support.receivers import receiver, smtp  # noqa: F401
