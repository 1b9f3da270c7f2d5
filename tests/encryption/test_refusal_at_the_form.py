"""A refusal only the host can give (a passphrase that does not fit) comes back to the form that asked: the
encryption page says it beside the unlock form, with the operation one click away, until a later attempt works."""

from datetime import timedelta

from django.utils import timezone

from appliance.models import Operation
from appliance.operations import lock_key
from tests.encryption.test_keys import _session

REFUSED = "Key load error: Incorrect key provided for 'tank/vault'."


def _unlock(host, user, status, message="", minutes_ago=1):
    return Operation.objects.create(
        kind="encryption.unlock",
        host=host,
        user=user,
        target=lock_key(host, "encryption", "tank/vault"),
        params={"roots": ["tank/vault"], "dry_run": False},
        status=status,
        message=message,
        finished_at=timezone.now() - timedelta(minutes=minutes_ago),
    )


def _refusal(page: str) -> str:
    form = page.split('id="unlock-form"', 1)[1].split("</form>", 1)[0]
    return form.split('id="unlock-refused"', 1)[1].split("</div>", 1)[0] if 'id="unlock-refused"' in form else ""


def test_a_wrong_passphrase_is_said_again_at_the_unlock_form(operator_client, operator_user, host):
    op = _unlock(host, operator_user, "failed", REFUSED)
    page = _session(operator_client, host).get("/encryption/").content.decode()
    said = _refusal(page)
    assert "Incorrect key provided for &#x27;tank/vault&#x27;" in said and "refused by nas1" in said
    assert f'href="/operations/{op.pk}/"' in said and operator_user.username in said
    assert 'id="change-key-refused"' not in page


def test_it_goes_once_a_later_attempt_works_or_an_hour_has_passed(operator_client, operator_user, host):
    _unlock(host, operator_user, "failed", REFUSED, minutes_ago=5)
    _unlock(host, operator_user, "succeeded", "Unlocked tank/vault")
    assert not _refusal(_session(operator_client, host).get("/encryption/").content.decode())
    Operation.objects.all().delete()
    _unlock(host, operator_user, "failed", REFUSED, minutes_ago=61)
    assert not _refusal(_session(operator_client, host).get("/encryption/").content.decode())
