"""iSCSI changes: a row saved (each value checked by hostlib.iscsi, with its field named), then one Operation that
renders the host's whole configuration from its rows and applies it (hostlib.iscsi.apply: the old one back if LIO
refuses). CHAP secrets are sealed before they are saved and opened only by the worker that writes the host's file;
they never travel in an Operation's parameters or the audit."""

import secrets

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance import vault
from appliance.checks import checked, confirmed, saved, sealed
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import iscsi
from hostlib.errors import HostError
from iscsi.choices import ALL_PORTALS
from iscsi.models import Initiator, Lun, Target
from pools import selectors as pools
from pools.choices import DatasetType
from tuning import selectors as tuning


def _apply_start(host, user, what: str) -> Operation:
    return operation_start(kind="iscsi.apply", host=host, user=user, params={"what": what})


def target_save_start(
    *, host, user, iqn: str, portals: str | list[str] = ALL_PORTALS, enabled: bool = True, pk: int | None = None
) -> Operation:
    """A target made (or changed): its name, its portals (lines of address[:port]: addresses the host has, checked
    again on the host, or 0.0.0.0 for all) and whether it takes logins."""
    row = Target.objects.filter(host=host, pk=pk).first() if pk else Target(host=host)
    if pk and row is None:
        raise ValidationError({"iqn": "That target no longer exists."})
    row.iqn = checked(lambda: iscsi.node_name(iqn, "iqn"))
    found = checked(lambda: iscsi.portals(portals, "portals"))
    known = tuning.host_addresses(host)
    for where, _ in found:
        if where not in ("0.0.0.0", "::") and known and where not in known:
            raise ValidationError({"portals": f"{where} is not an address of {host.name} ({', '.join(known[:6])})."})
    row.portals = [[where, number] for where, number in found]
    row.enabled = bool(enabled)
    taken = f"{host.name} has a target named {row.iqn} already."
    if Target.objects.filter(host=host, iqn=row.iqn).exclude(pk=row.pk).exists():
        raise ValidationError({"iqn": taken})
    with transaction.atomic():
        saved(row, "iqn", taken)
        return _apply_start(host, user, f"target {row.iqn}")


def target_delete_start(*, host, user, pk: int, confirm: str) -> Operation:
    row = _target(host, pk)
    refusal = f"Type the target's name ({row.iqn}) to remove it and its LUNs (the zvols stay)."
    return _removed(host, user, row, confirm, row.iqn, refusal, f"removal of target {row.iqn}")


def _removed(host, user, row, typed: str, name: str, refusal: str, what: str) -> Operation:
    """A row removed once its name is typed, and the configuration applied without it."""
    confirmed(typed, name, refusal)
    with transaction.atomic():
        row.delete()
        return _apply_start(host, user, what)


def _still_there(row: Target) -> None:
    """The target held until the transaction ends (one removed meanwhile is a refusal, not a failed commit)."""
    if not Target.objects.select_for_update().filter(pk=row.pk).exists():
        raise ValidationError({"target": "That target was removed a moment ago."})


def _target(host, pk) -> Target:
    row = Target.objects.filter(host=host, pk=pk).first()
    if row is None:
        raise ValidationError({"target": "That target no longer exists."})
    return row


def lun_add_start(
    *, host, user, target: int, zvol: str, number: int | None = None, write_back: bool = False,
    read_only: bool = False,
) -> Operation:  # fmt: skip
    """A zvol of the host's served as a LUN of the target (the next free number unless given); one LUN a zvol."""
    row = _target(host, target)
    dataset = pools.dataset_named(host=host, name=zvol)
    if dataset is None or dataset.type != DatasetType.VOLUME:
        raise ValidationError({"zvol": f"{host.name} has no zvol {zvol} (refresh the inventory?)."})
    used = set(row.luns.values_list("number", flat=True))
    number = min(set(range(iscsi.MAX_LUNS)) - used) if number is None else int(number)
    if not 0 <= number < iscsi.MAX_LUNS:
        raise ValidationError({"number": f"A LUN number is 0-{iscsi.MAX_LUNS - 1}."})
    if number in used:
        raise ValidationError({"number": f"{row.iqn} has a LUN {number} already."})
    other = Lun.objects.filter(host=host, zvol=zvol).select_related("target").first()
    if other is not None:
        raise ValidationError({"zvol": f"{zvol} is LUN {other.number} of {other.target.iqn} already."})
    lun = Lun(host=host, target=row, number=number, zvol=zvol, serial=iscsi.new_serial(), write_back=bool(write_back),
              read_only=bool(read_only))  # fmt: skip
    with transaction.atomic():
        _still_there(row)
        saved(lun, "zvol", f"{zvol} or LUN {number} was taken a moment ago: look again.")
        return _apply_start(host, user, f"LUN {number} ({zvol}) of {row.iqn}")


def lun_remove_start(*, host, user, pk: int, confirm: str) -> Operation:
    lun = Lun.objects.filter(host=host, pk=pk).select_related("target").first()
    if lun is None:
        raise ValidationError({"zvol": "That LUN no longer exists."})
    refusal = f"Type the zvol's name ({lun.zvol}) to stop serving it: initiators lose the disk."
    return _removed(
        host, user, lun, confirm, lun.zvol, refusal, f"removal of LUN {lun.number} ({lun.zvol}) of {lun.target.iqn}"
    )


def initiator_save_start(
    *, host, user, target: int, iqn: str, chap_user: str = "", chap_secret: str = "", mutual_user: str = "",
    mutual_secret: str = "", pk: int | None = None,
) -> Operation:  # fmt: skip
    """An initiator allowed into the target, with CHAP (and mutual CHAP) or none; a secret left empty on a change
    keeps the one saved. Secrets are checked (12-16 characters, the mutual one different), then sealed."""
    row = _target(host, target)
    acl = Initiator.objects.filter(target=row, pk=pk).first() if pk else Initiator(target=row)
    if pk and acl is None:
        raise ValidationError({"iqn": "That initiator is no longer allowed."})
    acl.iqn = checked(lambda: iscsi.node_name(iqn, "iqn"))
    keep_chap = bool(pk and chap_user == acl.chap_user and not chap_secret and acl.chap_secret)
    keep_mutual = bool(pk and mutual_user == acl.mutual_user and not mutual_secret and acl.mutual_secret)
    # A kept secret is sealed: the web cannot open it (only the workers read the vault's identity). It was checked
    # when it was set; here a random stand-in takes its place, and the worker's render checks the pair again.
    given = iscsi.Acl(acl.iqn, chap_user, _stand_in() if keep_chap else chap_secret, mutual_user,
                      _stand_in() if keep_mutual else mutual_secret)  # fmt: skip
    others = [_acl(i, secrets=False) for i in row.initiators.exclude(pk=acl.pk)]
    checked(lambda: iscsi.check([iscsi.Target(row.iqn, acls=[*_placeholders(others), given])]))
    acl.chap_user, acl.mutual_user = chap_user, mutual_user
    if not keep_chap:
        acl.chap_secret = sealed(chap_secret, "chap_secret") if chap_secret else ""
    if not keep_mutual:
        acl.mutual_secret = sealed(mutual_secret, "mutual_secret") if mutual_secret else ""
    taken = f"{acl.iqn} is allowed into {row.iqn} already."
    if Initiator.objects.filter(target=row, iqn=acl.iqn).exclude(pk=acl.pk).exists():
        raise ValidationError({"iqn": taken})
    with transaction.atomic():
        _still_there(row)
        saved(acl, "iqn", taken)
        return _apply_start(host, user, f"initiator {acl.iqn} of {row.iqn}")


def _stand_in() -> str:
    return secrets.token_urlsafe(12)[: iscsi.CHAP_MAX]


def _placeholders(acls: list[iscsi.Acl]) -> list[iscsi.Acl]:
    """The other initiators with stand-in secrets (the web cannot open the sealed ones): enough for "CHAP for all
    or none" and for names twice."""
    return [
        iscsi.Acl(
            a.initiator,
            a.chap_user,
            "x" * 12 if a.chap_secret else "",
            a.mutual_user,
            "y" * 12 if a.mutual_secret else "",
        )  # fmt: skip
        for a in acls
    ]


def initiator_remove_start(*, host, user, pk: int, confirm: str) -> Operation:
    acl = Initiator.objects.filter(target__host=host, pk=pk).select_related("target").first()
    if acl is None:
        raise ValidationError({"iqn": "That initiator is no longer allowed."})
    refusal = f"Type the initiator's name ({acl.iqn}) to refuse it: its sessions end."
    return _removed(host, user, acl, confirm, acl.iqn, refusal, f"removal of initiator {acl.iqn} from {acl.target.iqn}")


def _opened(row: Initiator, value: str) -> str:
    try:
        return vault.unseal(value) if value else ""
    except vault.VaultError as exc:
        raise HostError(f"the CHAP secret of {row.iqn} does not open ({exc}): set it again") from None


def _acl(row: Initiator, *, secrets: bool = True) -> iscsi.Acl:
    """An initiator as hostlib takes it: with secrets (the worker, which can open the vault) or only whether it has
    them (a sealed value stands for itself)."""
    if not secrets:
        return iscsi.Acl(row.iqn, row.chap_user, row.chap_secret, row.mutual_user, row.mutual_secret)
    return iscsi.Acl(row.iqn, row.chap_user, _opened(row, row.chap_secret), row.mutual_user,
                     _opened(row, row.mutual_secret))  # fmt: skip


def _under(name: str, roots) -> bool:
    return any(name == r or name.startswith(f"{r}/") for r in roots)


def configuration(host, *, offline=(), back=()) -> list[iscsi.Target]:
    """The host's targets as hostlib renders them, secrets opened (the worker's alone). A LUN whose zvol is locked
    (as the inventory read it, or below `offline`: about to lock) is left out, so LIO lets go of it and a locked
    zvol never fails an apply; below `back` (just unlocked, the inventory not read yet) it is served again."""
    locked = {n for n in pools.locked_volumes(host=host) if not _under(n, back)}
    return [
        iscsi.Target(
            row.iqn,
            portals=[(a, p) for a, p in row.portals],
            luns=[
                iscsi.Lun(lun.number, lun.zvol, lun.serial, lun.write_back, lun.read_only)
                for lun in row.luns.all()
                if lun.zvol not in locked and not _under(lun.zvol, offline)
            ],
            acls=[_acl(acl) for acl in row.initiators.all()],
            enabled=row.enabled,
        )
        for row in Target.objects.filter(host=host).prefetch_related("luns", "initiators")
    ]


@operation_runner("iscsi.apply", lock="iscsi")
def iscsi_apply_run(tracker: Tracker) -> None:
    """The host's whole iSCSI configuration rendered from its rows and made live (the old one back if refused)."""
    t = tracker.transport()
    tracker.progress(20, "Writing LIO's configuration and restoring it")
    changed = iscsi.apply(t, configuration(tracker.op.host))  # InvalidIscsi is a HostError: the operation says it
    what = tracker.op.params.get("what", "the configuration")
    tracker.progress(100, f"Applied {what}" if changed else f"Applied {what}: nothing changed on the host")


def sessions_read_start(*, host, user) -> Operation:
    return operation_start(kind="iscsi.sessions", host=host, user=user)


@operation_runner("iscsi.sessions", lock="iscsi-sessions", reads=True)
def iscsi_sessions_run(tracker: Tracker) -> None:
    """Who is logged in now, read off configfs, kept on each target's row for its page."""
    found = iscsi.sessions(tracker.transport())
    now = timezone.now()
    for row in Target.objects.filter(host=tracker.op.host):
        mine = [
            {"initiator": s.initiator, "state": s.state, "addresses": s.addresses} for s in found if s.target == row.iqn
        ]
        Target.objects.filter(pk=row.pk).update(sessions=mine, sessions_read_at=now)
    tracker.progress(100, f"{len(found)} session(s) logged in")


def luns_release(*, host, t, roots: list[str], locking: bool) -> list[str]:
    """pools.dependents' releaser: the LUNs on zvols below roots offline before they lock, back once unlocked."""
    rows = [lun for lun in Lun.objects.filter(host=host).select_related("target") if _under(lun.zvol, roots)]
    if not rows:
        return []
    iscsi.apply(t, configuration(host, offline=roots) if locking else configuration(host, back=roots))
    return [f"iSCSI LUN {lun.number} of {lun.target.iqn} ({lun.zvol})" for lun in rows]
