"""The lab tier uses the shared lab fixtures."""

from tests.support.lab_fixtures import guest, lab, lab_host  # noqa: F401
