"""Pools: create, destroy, scrub, TRIM, devices (offline/online/replace/attach/detach/clear), add vdevs,
export and import, and the per-disk figures behind the creation preview."""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from appliance.checks import checked, confirmed, new_key
from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import zfs, zpool
from hostlib.zpool import InvalidLayout, PoolLayout
from pools.models import Dataset, Disk, ImportablePool, MediaSpeed, Pool, Vdev
from pools.selectors import CONFIRMED, DevicePlan, device_member, device_plan
from pools.services.commands import command_start, refuse_if_in_use, require_pool
from pools.services.inventory import Scope, inventory_refresh


def pool_create_start(
    *,
    host: Host,
    user,
    name: str,
    layout: PoolLayout,
    pool_props: dict,
    root_props: dict,
    force: bool = False,
    encryption: str = "",
    passphrase: str = "",
    passphrase_confirm: str = "",
    pbkdf2iters: int | None = None,
) -> Operation:
    """Check everything against the inventory now; the worker runs `zpool create` and refreshes. encryption: ''
    (none), passphrase (handed to zpool on stdin, stored nowhere) or hex/raw (a key Tarn makes, kept in a root-only
    key file on the NAS that the pool's import loads): the pool's root dataset is then an encryption root."""
    errors = {}
    key, secret = None, ""
    if encryption:  # a pool's key format is its form's `encryption` field; none: not encrypted
        key, secret = new_key(
            name=name,
            keyformat=encryption,
            passphrase=passphrase,
            passphrase_confirm=passphrase_confirm,
            field="encryption",
            pbkdf2iters=pbkdf2iters,
        )
    argv = checked(
        lambda: zpool.create_argv(
            name, layout, pool_props=pool_props, root_props=root_props, force=force, encryption=key
        ),
        layout="disks",
    )
    if Pool.objects.filter(host=host, name=name).exists():
        errors["name"] = f"{host.name} already has a pool named {name}."
    try:
        _disks_free(host, layout.disks())
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if errors:
        raise ValidationError(errors)
    if key is None:
        return command_start(
            host=host,
            user=user,
            kind="pools.create",
            target=f"pool:{name}",
            argvs=[argv],
            done=f"Pool {name} created",
            scope=Scope(pools=[name], trees=[name], disks=True),
        )
    return operation_start(
        kind="pools.create",
        runner="pools.create_encrypted",
        host=host,
        user=user,
        subject=f"pool:{name}",
        secret=secret,
        params={"name": name, "argv": argv, "keyformat": key.keyformat, "keyfile": key.keyfile},
    )


@operation_runner("pools.create_encrypted", lock="")
def pool_create_encrypted_run(tracker: Tracker) -> None:
    """zpool create with an encrypted root: the key file written first (hex/raw), or the passphrase on stdin; the
    empty folder the root mounts on made immutable while unmounted (nothing lands in it while the pool is locked)."""
    op, p = tracker.op, tracker.op.params
    t = tracker.transport()
    tracker.progress(20, f"Creating the pool {p['name']} (encrypted, {p['keyformat']})")
    zfs.create_keyed(t, p["argv"], keyformat=p["keyformat"], keyfile=p["keyfile"], secret=tracker.secret or "")
    if said := zfs.seal_mount_folder(t, p["name"], remount=True):
        tracker.log(said)
    tracker.progress(85, "Reading what changed")
    inventory_refresh(host=op.host, operation=op, scope=Scope(pools=[p["name"]], trees=[p["name"]], disks=True))
    where = f": its key is in {p['keyfile']} on the NAS; export it now" if p["keyfile"] else ""
    tracker.progress(100, f"Pool {p['name']} created, encrypted{where}")


def pool_destroy_start(*, host: Host, user, name: str, confirm: str) -> Operation:
    """Destroy, then clear the members' labels so the disks are free again (a destroyed pool's label blocks reuse)."""
    confirmed(confirm, name, f"Type the pool's name ({name}) to destroy it.")
    require_pool(host, name, "name")
    refuse_if_in_use(host, name)
    members = Vdev.objects.filter(pool__host=host, pool__name=name, type="disk").exclude(path="")
    argvs = [zpool.destroy_argv(name)] + [
        zpool.labelclear_argv(path) for path in members.values_list("path", flat=True)
    ]
    return command_start(
        host=host,
        user=user,
        kind="pools.destroy",
        target=f"pool:{name}",
        argvs=argvs,
        done=f"Pool {name} destroyed",
        scope=Scope(pools=[name], disks=True),
    )


def pool_scrub_start(*, host, user, pool: str, action: str) -> Operation:
    require_pool(host, pool)
    argv = checked(lambda: zpool.scrub_argv(pool, action))
    return command_start(
        host=host,
        user=user,
        kind=f"pools.scrub_{action}",
        target=f"pool:{pool}:scrub",
        argvs=[argv],
        done={"start": "Scrub started", "pause": "Scrub paused", "stop": "Scrub stopped"}[action],
        scope=Scope(pools=[pool]),
    )


def pool_export_start(*, host, user, name: str) -> Operation:
    require_pool(host, name, "name")
    refuse_if_in_use(host, name)
    return command_start(
        host=host,
        user=user,
        kind="pools.export",
        target=f"pool:{name}",
        argvs=[zpool.export_argv(name)],
        done=f"Pool {name} exported",
        scope=Scope(pools=[name], disks=True),
    )


def pool_import_scan_start(*, host, user) -> Operation:
    return operation_start(kind="pools.import_scan", host=host, user=user)


@operation_runner("pools.import_scan", lock="import-scan", reads=True)
def pool_import_scan_run(tracker: Tracker) -> None:
    """A read: `zpool import` scans the disks; what it finds is stored for the page to list."""
    op = tracker.op
    tracker.progress(10, "Scanning disks for pools")
    result = zpool.import_scan(tracker.transport())
    found = zpool.parse_import(result.stdout)
    now = timezone.now()
    with transaction.atomic():
        ImportablePool.objects.filter(host=op.host).delete()
        ImportablePool.objects.bulk_create(
            [
                ImportablePool(
                    host=op.host,
                    name=p.name,
                    guid=p.guid,
                    state=p.state,
                    status=p.status,
                    action=p.action,
                    observed_at=now,
                )
                for p in found
            ]
        )
    tracker.progress(100, f"Found {len(found)} pool{'s' if len(found) != 1 else ''} to import")


def pool_import_start(*, host, user, guid: str, new_name: str = "") -> Operation:
    candidate = ImportablePool.objects.filter(host=host, guid=guid).first()
    if candidate is None:
        raise ValidationError({"guid": "That pool is not in the last scan: scan again."})
    name = new_name or candidate.name
    if Pool.objects.filter(host=host, name=name).exists():
        raise ValidationError(
            {"new_name": f"{host.name} already has a pool named {name}: import it under another name."}
        )
    argv = checked(lambda: zpool.import_argv(guid, new_name))
    ImportablePool.objects.filter(pk=candidate.pk).delete()
    return operation_start(
        kind="pools.import", host=host, user=user, subject=f"pool:{name}", params={"argv": argv, "name": name}
    )


@operation_runner("pools.import", lock="")
def pool_import_run(tracker: Tracker) -> None:
    """Import, then load the keys the pool's encryption roots keep in key files (a passphrase cannot be: those stay
    locked, and the operation says which) and mount what opened."""
    op, p = tracker.op, tracker.op.params
    t = tracker.transport()
    tracker.progress(10, f"Importing {p['name']}")
    t.run(p["argv"], timeout=600, mutating=True)
    tracker.progress(50, "Loading the keys kept in key files")
    zfs.load_keys_below(t, p["name"])
    inventory_refresh(host=op.host, operation=op, scope=Scope(pools=[p["name"]], trees=[p["name"]], disks=True))
    locked = [d for d in Dataset.objects.filter(host=op.host, pool__name=p["name"]) if d.locked]
    roots = sorted(d.name for d in locked if d.encryption.get("root") == d.name)
    note = f"; locked (their passphrase is needed: Encryption page): {', '.join(roots[:10])}" if roots else ""
    tracker.progress(100, f"Pool {p['name']} imported{note}")


DEVICE_DONE = {
    "offline": "Taken offline",
    "online": "Back online",
    "clear": "Errors cleared",
    "replace": "Replacing: the resilver runs in the background (see the pool)",
    "attach": "Attached: the new disk resilvers in the background (see the pool)",
    "detach": "Detached",
}


def pool_device_start(
    *, host, user, pool: str, action: str, device: str = "", new_device: str = "", confirm: str = ""
) -> Operation:
    """Offline, online, replace, attach or detach a member disk, or clear a pool's (or one device's) errors.

    Replace, attach and offline are confirmed by the device's name typed (offline that would leave its vdev with no
    redundancy: the pool's name; one that would take the vdev down is refused, as zpool would); a new disk must be
    free and at least as large as the member (pools.selectors.device_plan: the page offers the same)."""
    require_pool(host, pool)
    if action not in DEVICE_DONE:
        raise ValidationError({"action": f"One of {', '.join(DEVICE_DONE)}."})
    if action != "clear" and not device:
        raise ValidationError({"device": f"Choose the disk of {pool} to {action}."})
    if action in ("replace", "attach") and not new_device:
        raise ValidationError({"new_device": f"Choose the free disk to {action}."})
    member = device_member(pool=Pool.objects.get(host=host, name=pool), device=device)
    if device and member is None:
        raise ValidationError({"device": f"{device} is not a disk of {pool}."})
    if action == "detach" and (member.parent is None or member.parent.type not in ("mirror", "replacing", "spare")):
        raise ValidationError({"device": "Only a disk of a mirror (or one being replaced) can be detached."})
    if action == "attach" and member.role not in ("data", "special", "log"):
        raise ValidationError({"device": "A disk is attached next to a data, special or log disk."})
    if action == "attach" and member.parent is not None and member.parent.type != "mirror":
        raise ValidationError(
            {"device": f"{device} is in a {member.parent.type}: attach works on mirrors and single disks."}
        )
    if action in CONFIRMED:
        _device_check(host, device_plan(host=host, member=member, action=action), new_device, confirm)
    argvs = [checked(lambda: zpool.device_argv(action, pool, device, new_device))]
    if action == "detach":  # detach leaves the ZFS label, which keeps the disk from counting as free
        argvs.append(zpool.labelclear_argv(device))
    return command_start(
        host=host,
        user=user,
        kind=f"pools.{action}",
        target=f"pool:{pool}",
        argvs=argvs,
        done=DEVICE_DONE[action],
        scope=Scope(pools=[pool], disks=True),
    )


def _device_check(host, plan: DevicePlan, new_device: str, confirm: str) -> None:
    if new_device:
        disk = Disk.objects.filter(host=host).filter(Q(by_id=new_device) | Q(path=new_device)).first()
        if disk is None or not disk.is_free:
            raise ValidationError(
                {"new_device": f"{new_device} is not a free disk ({disk.usage if disk else 'unknown'})."}
            )
        if disk.size < plan.need:
            raise ValidationError(
                {
                    "new_device": f"{new_device} ({disk.size / 1e9:.2f} GB) is smaller than {plan.member.name} "
                    f"({plan.need / 1e9:.2f} GB): ZFS needs a disk at least as large."
                }
            )
    if plan.margin is not None and plan.margin < 0:
        raise ValidationError(
            {
                "device": f"{plan.member.name} holds the only valid copy of {plan.top.name}'s data: taking it offline "
                "would stop the pool. Bring its other disks back, or replace it instead."
            }
        )
    if not plan.confirmed(confirm):
        raise ValidationError({"confirm": plan.confirm_why})


def pool_trim_start(*, host, user, pool: str, action: str) -> Operation:
    require_pool(host, pool)
    argv = checked(lambda: zpool.trim_argv(pool, action))
    done = {"start": "TRIM started", "suspend": "TRIM suspended", "cancel": "TRIM cancelled"}[action]
    return command_start(
        host=host,
        user=user,
        kind=f"pools.trim_{action}",
        target=f"pool:{pool}:trim",
        argvs=[argv],
        done=done,
        scope=Scope(pools=[pool]),
    )


def pool_add_start(*, host, user, pool: str, layout: PoolLayout, force: bool = False) -> Operation:
    """Grow a pool: data vdevs (permanent: a raidz vdev cannot be removed again), or log/special/cache/spare."""
    require_pool(host, pool)
    try:
        argv = zpool.add_argv(pool, layout, force=force)
    except InvalidLayout as exc:
        raise ValidationError({"disks": str(exc)}) from None
    _disks_free(host, layout.disks())
    return command_start(
        host=host,
        user=user,
        kind="pools.add",
        target=f"pool:{pool}",
        argvs=[argv],
        done=f"Added to {pool}",
        scope=Scope(pools=[pool], disks=True),
    )


def _disks_free(host, paths: list[str]) -> None:
    known = {d.by_id or d.path: d for d in Disk.objects.filter(host=host).select_related("pool")}
    missing = [p for p in paths if p not in known]
    if missing:
        raise ValidationError({"disks": "Not on this host (refresh the inventory?): " + ", ".join(missing)})
    busy = [f"{p} ({known[p].usage})" for p in paths if not known[p].is_free]
    if busy:
        raise ValidationError({"disks": "Not free: " + ", ".join(busy)})


def media_speed_save(*, media: str, mb_s: int, iops: int) -> None:
    if media not in ("hdd", "ssd", "nvme"):
        raise ValidationError({"media": "One of hdd, ssd, nvme."})
    if not (1 <= mb_s <= 100_000 and 1 <= iops <= 10_000_000):
        raise ValidationError({"mb_s": "MB/s from 1 to 100,000 and IOPS from 1 to 10,000,000."})
    MediaSpeed.objects.update_or_create(media=media, defaults={"mb_s": mb_s, "iops": iops})
