"""Pairs: a key made on the NAS that dials, allowed on the other for one forced command only; on the receiving NAS
a user of the pair's own that ZFS lets receive into the pair's root and nowhere else, and a quota on that root."""

import ipaddress

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from appliance.checks import checked
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import names, replication
from hostlib.errors import HostError
from pools import selectors as pools
from replication.choices import Direction, PairStatus
from replication.models import Pair

REPLICATION = "replication"
QUOTA_MAX = 1 << 62  # bytes: past anything a pool holds, inside a signed 64-bit column


def pair_start(
    *,
    source,
    target,
    address: str,
    root: str,
    user,
    quota: int | str,
    port: int = 22,
    direction: str = Direction.PUSH,
    send_root: str = "",
) -> Operation:
    """A pair row (status pairing) and the Operation that makes the key on the NAS that dials (push: the source,
    pull: the target) and allows it on the other; the target's root gets its quota and the pair's user."""
    if direction not in Direction.values:
        raise ValidationError({"direction": "push (the source dials) or pull (the target dials)."})
    try:
        address = str(ipaddress.ip_address(address))
    except ValueError:
        raise ValidationError({"address": f"{address!r} is not an IP address."}) from None
    if type(port) is not int or not 1 <= port <= 65535:
        raise ValidationError({"port": "A TCP port, 1 to 65535."})
    quota = _check_quota(quota)
    checked(lambda: names.dataset_name(root), "root")
    if not target.has_zfs:
        raise ValidationError({"target": f"{target.name} has no ZFS (as last read)."})
    if not pools.dataset_exists(host=target, name=root):
        raise ValidationError({"root": f"{target.name} has no dataset {root}: create it first."})
    if direction == Direction.PULL:
        checked(lambda: names.dataset_name(send_root), "send_root", prefix="A pull pair names what it may send: ")
        if not pools.dataset_exists(host=source, name=send_root):
            raise ValidationError({"send_root": f"{source.name} has no dataset {send_root}."})
    elif send_root:
        raise ValidationError({"send_root": "Only a pull pair names what it may send."})
    try:
        with transaction.atomic():
            pair = Pair.objects.create(
                source=source,
                target=target,
                address=address,
                port=port,
                root=root,
                quota=quota,
                direction=direction,
                send_root=send_root,
            )
    except IntegrityError:
        raise ValidationError({"root": f"{source.name} is already paired with {target.name} into {root}."}) from None
    return operation_start(
        kind="replication.pair", host=source, user=user, subject=f"pair-{pair.pk}", params={"pair": pair.pk}
    )


def ends(pair: Pair, src, dst) -> list:
    """Both hosts' transports, or one when a host replicates to itself."""
    return [src] if pair.source_id == pair.target_id else [src, dst]


def dialling(pair: Pair, src, dst) -> tuple:
    """(the dialler's transport, the answerer's), from the source's and the target's."""
    return (dst, src) if pair.pulls else (src, dst)


def _keys(pair: Pair) -> str:
    """The answerer's authorized_keys the pair's line goes in: root's for a pull (tarn-serve sends as root), the
    pair's user's for a push (tarn-recv receives as that user)."""
    return replication.AUTHORIZED_KEYS if pair.pulls else replication.recv_keys(pair.pk)


@operation_runner("replication.pair", lock=REPLICATION)
def pair_run(tracker: Tracker) -> None:
    pair = Pair.objects.select_related("source", "target").get(pk=tracker.op.params["pair"])
    src, dst = tracker.transport(pair.source), tracker.transport(pair.target)
    near, far = dialling(pair, src, dst)
    helper, served = pair.forced
    try:
        tracker.progress(10, "Installing tarn-send, tarn-recv and tarn-serve")
        for t in ends(pair, src, dst):
            replication.install_helpers(t)
        sender = replication.sender_address(near, pair.address)
        tracker.progress(
            25, f"On {pair.target.name}: the user tarn-recv-{pair.pk}, allowed to receive into {pair.root}"
        )
        replication.receiver_prepare(dst, pair.pk, pair.root)
        replication.set_quota(dst, pair.root, pair.quota)
        tracker.progress(40, f"Making the pair's key on {pair.dialler.name}")
        public = replication.pair_make_key(near, pair.pk)
        replication.pair_pin(near, pair.pk, pair.address, pair.port, replication.host_keys(far))
        tracker.progress(70, f"Allowing it on {pair.answerer.name}: only {helper} {served}, only from {sender}")
        line = replication.authorized_line(pair.pk, served, sender, public, serve=pair.pulls)
        replication.authorize(far, pair.pk, line, keys=_keys(pair))
        hello = replication.pair_check(near, pair.pk, pair.address, pair.port, helper=helper)
    except (HostError, ValueError) as exc:
        Pair.objects.filter(pk=pair.pk).update(status=PairStatus.FAILED, message=str(exc)[:1000])
        try:  # a half-made pair leaves no access behind
            replication.authorize(far, pair.pk, None, keys=_keys(pair))
            replication.receiver_release(dst, pair.pk, pair.root)
        except HostError:
            pass
        raise HostError(f"Pairing failed: {exc}") from None
    Pair.objects.filter(pk=pair.pk).update(
        status=PairStatus.PAIRED, sender_address=sender, public_key=public, message=hello, receiver_ready=True
    )
    how = f"{pair.target.name} pulls from {pair.source.name}" if pair.pulls else f"{pair.source.name} sends"
    tracker.progress(100, f"Paired: {how} to {pair.target.name}:{pair.root} ({hello})")


def receiver_upgrade(tracker: Tracker, pair: Pair, dst) -> None:
    """A pair made before receives ran as the pair's own user: its user and ZFS's leave made on the target, and a
    push pair's line moved from root's authorized_keys to the user's (root no longer takes the key)."""
    tracker.log(f"{pair.target.name}: receives now run as tarn-recv-{pair.pk}, allowed into {pair.root} only")
    replication.receiver_prepare(dst, pair.pk, pair.root)
    if not pair.pulls and pair.public_key and pair.sender_address:
        line = replication.authorized_line(pair.pk, pair.root, pair.sender_address, pair.public_key)
        replication.authorize(dst, pair.pk, line, keys=replication.recv_keys(pair.pk))
        replication.authorize(dst, pair.pk, None)
    Pair.objects.filter(pk=pair.pk).update(receiver_ready=True)
    pair.receiver_ready = True


def unpair_start(*, pair: Pair, user) -> Operation:
    if pair.tasks.exists():
        raise ValidationError({"pair": "Delete the pair's replication tasks first."})
    with transaction.atomic():
        op = operation_start(
            kind="replication.unpair", host=pair.source, user=user, subject=f"pair-{pair.pk}", params={"pair": pair.pk}
        )
        Pair.objects.filter(pk=pair.pk).update(status=PairStatus.UNPAIRING)
    return op


@operation_runner("replication.unpair", lock=REPLICATION)
def unpair_run(tracker: Tracker) -> None:
    pair = Pair.objects.select_related("source", "target").get(pk=tracker.op.params["pair"])
    src, dst = tracker.transport(pair.source), tracker.transport(pair.target)
    near, far = dialling(pair, src, dst)
    try:
        replication.authorize(far, pair.pk, None)  # root's (a pull's, or a push's from before it had its user)
        if not pair.pulls:
            replication.authorize(far, pair.pk, None, keys=replication.recv_keys(pair.pk))
        replication.pair_unmake_key(near, pair.pk)
        replication.receiver_release(dst, pair.pk, pair.root)
    except HostError as exc:  # the pair stays as it was, saying why; unpairing can be tried again
        Pair.objects.filter(pk=pair.pk).update(status=PairStatus.PAIRED, message=f"Unpairing failed: {exc}"[:1000])
        raise
    pair.delete()
    tracker.progress(100, f"Unpaired: {pair.answerer.name} no longer accepts the key")


def pair_intrusion_clear(*, pair: Pair) -> None:
    """An admin has looked at the datasets a run found outside the pair's root (and dealt with them)."""
    Pair.objects.filter(pk=pair.pk).update(intrusion="")


def _check_quota(quota: int | str) -> int:
    """Bytes, or a size as other sizes are written (2T, 500G, 1099511627776): more than 0."""
    says = "The most the pair may store on the target: a size such as 2T or 500G, more than 0."
    if isinstance(quota, str):
        try:
            quota = names.parse_size(quota)
        except ValueError:
            raise ValidationError({"quota": says}) from None
    if type(quota) is not int or not 1 <= quota <= QUOTA_MAX:
        raise ValidationError({"quota": says})
    return quota


def pair_quota_start(*, pair: Pair, quota: int | str, user) -> Operation:
    """A new quota on the pair's root (admin): a replica bigger than it stops the next run with "out of space"."""
    quota = _check_quota(quota)
    if pair.status != PairStatus.PAIRED:
        raise ValidationError({"quota": "The pair is not paired."})
    return operation_start(
        kind="replication.pair_quota",
        host=pair.target,
        user=user,
        subject=f"pair-{pair.pk}",
        params={"pair": pair.pk, "quota": quota},
    )


@operation_runner("replication.pair_quota")
def pair_quota_run(tracker: Tracker) -> None:
    pair = Pair.objects.select_related("target").get(pk=tracker.op.params["pair"])
    quota = int(tracker.op.params["quota"])
    replication.set_quota(tracker.transport(pair.target), pair.root, quota)
    Pair.objects.filter(pk=pair.pk).update(quota=quota)
    tracker.progress(100, f"{pair.target.name}:{pair.root} may hold {quota} bytes")
