"""The checks every app's services share (appliance.checks): a host-layer refusal lands on the field that asked, a
passphrase typed twice, the key of a new encryption root."""

import pytest
from django.core.exceptions import ValidationError

from appliance.checks import PASSPHRASES_DIFFER, checked, new_key, passphrase_confirmed
from backups.services import check_passphrase as backup_passphrase
from hostlib import names, zfs
from hostlib.zpool import PoolLayout, check_layout


def _refusal(call, *args, **kwargs):
    with pytest.raises(ValidationError) as caught:
        checked(call, *args, **kwargs)
    return caught.value


def test_a_host_layer_refusal_lands_on_the_field_that_asked():
    assert checked(lambda: names.dataset_name("tank/data"), "root") == "tank/data"
    assert set(_refusal(lambda: names.dataset_name("tank/-x"), "root").message_dict) == {"root"}
    said = _refusal(lambda: names.dataset_name("tank/-x"), "send_root", prefix="A pull pair: ").message_dict
    assert said["send_root"][0].startswith("A pull pair: ")
    assert set(_refusal(lambda: zfs.create_argv("tank/x", {"nosuch": "1"})).message_dict) == {"nosuch"}
    empty = PoolLayout(data=())
    assert _refusal(lambda: check_layout(empty), layout="disks").message_dict.keys() == {"disks"}
    assert not hasattr(_refusal(lambda: check_layout(empty)), "error_dict")  # the form as a whole


def test_a_passphrase_follows_its_rule_then_must_be_typed_the_same_twice():
    assert passphrase_confirmed("correct horse", "correct horse") == "correct horse"
    with pytest.raises(ValidationError) as caught:
        passphrase_confirmed("correct horse", "correct hose", field="new_passphrase")
    assert caught.value.message_dict == {"new_passphrase_confirm": [PASSPHRASES_DIFFER]}
    for bad in ["short", "two\nlines!", "nul\0inside"]:
        with pytest.raises(ValidationError) as caught:
            passphrase_confirmed(bad, bad, field="export_passphrase")
        assert set(caught.value.message_dict) == {"export_passphrase"}
    with pytest.raises(ValidationError) as caught:  # a backup's rule: 12 characters at least, checked the same way
        backup_passphrase("eleven char", "eleven char")
    assert set(caught.value.message_dict) == {"passphrase"}
    with pytest.raises(ValidationError) as caught:
        backup_passphrase("twelve chars", "twelve chars ")
    assert caught.value.message_dict == {"passphrase_confirm": [PASSPHRASES_DIFFER]}


def test_a_new_key_is_the_passphrase_typed_twice_or_a_hex_key_made_here_for_a_new_key_file():
    key, secret = new_key(
        name="tank/secret", keyformat="passphrase", passphrase="a passphrase", passphrase_confirm="a passphrase"
    )
    assert (key.keyformat, key.keyfile, secret) == ("passphrase", "", "a passphrase")
    for keyformat in ("hex", "raw"):
        key, secret = new_key(name="tank/secret", keyformat=keyformat)
        assert key.keyformat == keyformat and key.keyfile.startswith(f"{zfs.KEY_DIR}/tank%secret.")
        assert zfs.check_hex_key(secret) == secret  # raw keys travel as hex too
    with pytest.raises(ValidationError) as caught:
        new_key(name="tank/secret", keyformat="pem", field="encryption")
    assert set(caught.value.message_dict) == {"encryption"}
    with pytest.raises(ValidationError) as caught:
        new_key(name="tank/-bad", keyformat="hex")
    assert set(caught.value.message_dict) == {"name"}
    with pytest.raises(ValidationError) as caught:
        new_key(name="tank/secret", keyformat="passphrase", passphrase="a passphrase", passphrase_confirm="another one")
    assert set(caught.value.message_dict) == {"passphrase_confirm"}
