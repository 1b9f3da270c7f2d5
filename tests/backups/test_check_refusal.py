"""A refusal only the worker can give (the passphrase does not open the file) comes back to the form that asked."""

import pytest
from django.urls import reverse

from tests.backups.test_backups import _backup, _check


@pytest.mark.django_db(transaction=True)
def test_a_wrong_passphrase_on_a_check_is_said_again_at_the_check_form(data_dir, run_queued, admin_user, admin_client):
    """The worker finds the passphrase wrong (only opening the file can tell): the backup's page says so beside the
    check form, linked to the operation, until a check works."""
    backup = _backup(run_queued, admin_user)
    op = _check(run_queued, backup, admin_user, "not the passphrase at all")
    assert op.status == "failed"
    page = admin_client.get(reverse("backup-detail", args=[backup.pk])).content.decode()
    form = page.split('id="check-form"', 1)[1].split("</form>", 1)[0]
    assert 'id="check-refused"' in form and op.message.split(":")[0] in form
    assert f'href="/operations/{op.pk}/"' in form and 'id="restore-refused"' not in page
    assert _check(run_queued, backup, admin_user).status == "succeeded"
    assert 'id="check-refused"' not in admin_client.get(reverse("backup-detail", args=[backup.pk])).content.decode()
