"""Checks every app's services share: the host library's refusals (a bad name, bad properties, a bad layout) turned
into errors on the field that asked, a name typed to confirm a destructive step, a passphrase typed twice, and the
key of a new encryption root (a pool's root dataset or an encrypted dataset: one rule for both)."""

import secrets
from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from appliance import vault
from hostlib import names, zfs
from hostlib.errors import InvalidField
from hostlib.zpool import InvalidLayout

PASSPHRASES_DIFFER = "The two passphrases differ."


def checked(call: Callable, field: str = "name", *, prefix: str = "", layout: str | None = None):
    """call() (a hostlib check or argv builder) with its refusals as field errors: a bad name on `field` (after
    prefix), properties on their own fields, a bad vdev layout on `layout` (None: the form as a whole)."""
    try:
        return call()
    except names.InvalidName as exc:
        raise ValidationError({field: f"{prefix}{exc}"}) from None
    except names.PropertyErrors as exc:
        raise ValidationError(exc.problems) from None
    except InvalidLayout as exc:
        raise ValidationError({layout: str(exc)} if layout else str(exc)) from None
    except InvalidField as exc:  # a refusal that names its own field (iSCSI, UPS)
        raise ValidationError({exc.field: str(exc)}) from None


def saved(row, field: str, taken: str) -> None:
    """Save the row; a twin saved a moment ago by another request (the check before passed for both) is a refusal
    on `field` saying `taken`, not a 500."""
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError:
        raise ValidationError({field: taken}) from None


def sealed(value: str, field: str) -> str:
    """A secret sealed by the vault for the workers to open; a vault that cannot seal is a refusal on `field`."""
    try:
        return vault.seal(value)
    except vault.VaultError as exc:
        raise ValidationError({field: f"Tarn cannot seal it: {exc}"}) from None


def confirmed(typed: str, name: str, refusal: str) -> None:
    """A destructive step goes on only with its object's name typed again, exactly as it is (never trimmed, as names
    are not): else `refusal`, which says what to type, on the form's confirm field (forms.ConfirmField)."""
    if typed != name:
        raise ValidationError({"confirm": refusal})


def passphrase_confirmed(
    passphrase: str,
    confirm: str | None,
    *,
    field: str = "passphrase",
    rule: Callable[[str, str], object] = zfs.check_passphrase,
) -> str:
    """A passphrase as rule(passphrase, field) takes one (OpenZFS's 8 to 512 bytes on one line, unless told), then
    typed the same again in `<field>_confirm` (None: not asked twice). Errors name the field."""
    checked(lambda: rule(passphrase, field))
    if confirm is not None and confirm != passphrase:
        raise ValidationError({f"{field}_confirm": PASSPHRASES_DIFFER})
    return passphrase


def new_key(
    *,
    name: str,
    keyformat: str,
    passphrase: str = "",
    passphrase_confirm: str = "",
    cipher: str = "aes-256-gcm",
    field: str = "keyformat",
    pbkdf2iters: int | None = None,
) -> tuple[zfs.NewKey, str]:
    """How the new encryption root `name` is keyed, and its secret: the passphrase typed twice, or a hex or raw key
    made here (carried as hex: zfs.key_input) that a new root-only key file on the NAS will hold. `field` names the
    key format's field on the form that asked."""
    if keyformat not in zfs.KEY_FORMATS:
        raise ValidationError({field: f"Choose one of: {', '.join(zfs.KEY_FORMATS)}."})
    rounds = pbkdf2iters or 0
    checked(lambda: zfs.pbkdf2_options(keyformat, rounds))
    if keyformat == "passphrase":
        key = zfs.NewKey(cipher=cipher, keyformat=keyformat, pbkdf2iters=rounds)
        return key, passphrase_confirmed(passphrase, passphrase_confirm)
    keyfile = checked(lambda: zfs.key_file_for(name))
    return zfs.NewKey(cipher=cipher, keyformat=keyformat, keyfile=keyfile), secrets.token_hex(32)


def host_said(exc: Exception, key: str = "path") -> ValidationError:
    """What a host said when a read or change of it was refused (hostlib's HostError), on the field that asked."""
    return ValidationError({key: str(exc)[:300]})
