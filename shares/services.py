"""Writes for shares: rows are the desired state; one operation renders, validates and applies the files of the
protocol a change touches (SMB, NFS or both). Samba passwords travel only in the queued message."""

from dataclasses import asdict

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance.checks import checked, confirmed, saved
from appliance.choices import Role
from appliance.connect import transport_for
from appliance.models import Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import nfs, posix, samba, zfs
from hostlib.configfiles import InvalidShare
from hostlib.digits import is_digits
from pools.selectors import filesystem, is_mounted
from pools.services import Scope, inventory_refresh, new_dataset_name
from shares.choices import NFS_CONFIRMATION_FIELDS
from shares.models import NfsExport, SambaUser, ShareStatus, SmbShare
from shares.selectors import listed_words, share_folder_accounts, share_settings


def _smb_spec(row) -> samba.SmbShareSpec:
    return samba.SmbShareSpec(
        name=row.name,
        path=row.path,
        comment=row.comment,
        preset=row.preset,
        read_only=row.read_only,
        browseable=row.browseable,
        guest_ok=row.guest_ok,
        valid_users=listed_words(row.valid_users),
        hosts_allow=listed_words(row.hosts_allow),
        hosts_deny=listed_words(row.hosts_deny),
        previous_versions=row.previous_versions,
        snapshot_prefix=row.snapshot_prefix,
        time_machine_quota=row.time_machine_quota,
    )


def _nfs_spec(row) -> nfs.NfsExportSpec:
    return nfs.NfsExportSpec(
        path=row.path,
        clients=row.client_list,
        read_only=row.read_only,
        squash=row.squash,
        anonuid=row.anonuid,
        anongid=row.anongid,
        sec=row.sec,
        async_writes=row.async_writes,
    )


def _globals(settings) -> tuple[samba.SmbGlobals, nfs.NfsGlobals]:
    return (
        samba.SmbGlobals(
            min_protocol=settings.smb_min_protocol,
            multichannel=settings.smb_multichannel,
            encryption=settings.smb_encryption,
            signing=settings.smb_signing,
            workgroup=settings.domain_workgroup or settings.workgroup,
            server_string=settings.server_string,
        ),
        nfs.NfsGlobals(v3=settings.nfs_v3, v4=settings.nfs_v4, threads=settings.nfs_threads),
    )


def shares_render(host, *, smb_rows=None, nfs_rows=None, settings=None) -> dict[str, str]:
    """Every file Tarn owns for this host's shares, from the rows (or from candidate rows being checked)."""
    smb_rows = list(SmbShare.objects.filter(host=host)) if smb_rows is None else smb_rows
    nfs_rows = list(NfsExport.objects.filter(host=host)) if nfs_rows is None else nfs_rows
    smb_globals, nfs_globals = _globals(settings or share_settings(host=host))
    try:
        return {
            "smb": samba.render_smb(smb_globals, [_smb_spec(r) for r in smb_rows]),
            "exports": nfs.render_exports([_nfs_spec(r) for r in nfs_rows]),
            "nfs_conf": nfs.render_nfs_conf(nfs_globals),
        }
    except InvalidShare as exc:
        raise ValidationError(exc.problems) from None


def _share_path(host, dataset_name: str) -> str:
    """A share's path is its dataset's mountpoint: inside a pool by construction, never into .zfs."""
    dataset = filesystem(host=host, name=dataset_name)
    if dataset is None:
        raise ValidationError({"dataset": f"{host.name} has no filesystem dataset {dataset_name}."})
    if not is_mounted(dataset):
        raise ValidationError({"dataset": f"{dataset_name} is not mounted (mountpoint {dataset.mountpoint})."})
    return dataset.mountpoint


def _share_row(model, host, data: dict, pk: int | None, path: str = ""):
    """The share or export being saved (not yet written) with its path (from the dataset unless given: a dataset
    the operation will create), and the host's others."""
    row = model.objects.filter(host=host, pk=pk).first() if pk else model(host=host)
    if pk and row is None:
        raise ValidationError({"dataset": "That share no longer exists."})
    for key, value in data.items():
        setattr(row, key, value)
    row.path = path or _share_path(host, row.dataset)
    return row, model.objects.filter(host=host).exclude(pk=row.pk)


def _shares_apply_start(host, user, what: str, parts, create=None, dataset="", folder="") -> Operation:
    """parts: which of Tarn's files the change touches ("smb", "nfs"); the others are left alone. create: the
    argvs of a new dataset (then folder: its root folder, made writable by the shared group)."""
    params = {"what": what, "parts": list(parts)}
    if create:
        scope = Scope(trees=[dataset], datasets=[dataset.rsplit("/", 1)[0]])
        params |= {"create": create, "folder": folder, "scope": scope.as_params()}
    return operation_start(kind="shares.apply", host=host, user=user, params=params)


# Dataset properties each SMB preset wants when the share form creates its dataset (documented in the README).
PRESET_DATASET_PROPERTIES = {
    "general": {"xattr": "sa"},
    "multi_user": {"xattr": "sa", "acltype": "posix"},
    "time_machine": {"xattr": "sa"},
    "private": {"xattr": "sa"},
    "archive": {"xattr": "sa", "compression": "zstd", "recordsize": "1M", "atime": "off"},
}


def _new_share_dataset(host, name: str, preset: str) -> tuple[list[list[str]], str, str]:
    """The argv that makes a share's new dataset (`zfs create` with the preset's properties), its future path, and
    the folder to make writable by Samba users through the shared group ('' for the read-only archive)."""
    argv = checked(lambda: zfs.create_argv(name, PRESET_DATASET_PROPERTIES.get(preset, {})), "new_dataset")
    new_dataset_name(host, name, "new_dataset")
    parent = _share_path(host, name.rsplit("/", 1)[0])
    path = f"{parent.rstrip('/')}/{name.rsplit('/', 1)[1]}"
    return [argv], path, "" if preset == "archive" else path


def smb_share_save_start(*, host, user, data: dict, pk: int | None = None, new_dataset: str = "") -> Operation:
    """Save a share and apply; with new_dataset, the operation first creates it with the preset's properties."""
    create, path, folder = None, "", ""
    if new_dataset:
        create, path, folder = _new_share_dataset(host, new_dataset, data.get("preset", "general"))
        data = {**data, "dataset": new_dataset}
    row, others = _share_row(SmbShare, host, data, pk, path)
    if row.valid_users.count('"') % 2:
        raise ValidationError({"valid_users": 'An unbalanced double quote: quote a whole name ("@LAB\\Domain Users").'})
    _domain_names_joined(host, listed_words(row.valid_users))
    if others.filter(name__iexact=row.name).exists():
        raise ValidationError({"name": f"{host.name} already has a share named {row.name} (names ignore case)."})
    shares_render(host, smb_rows=[*others, row])  # every value checked, the whole file renders
    what = f"SMB share {row.name}" + (f" on new dataset {new_dataset}" if new_dataset else "")
    with transaction.atomic():
        saved(row, "name", f"{host.name} already has a share named {row.name} (names ignore case).")
        return _shares_apply_start(host, user, what, ["smb"], create=create, dataset=new_dataset, folder=folder)


def _domain_names_joined(host, names: list[str]) -> None:
    """A domain's user or group in valid users needs this host joined to that domain (Directory)."""
    joined = share_settings(host=host).domain_workgroup.upper()
    strangers = [n for n in names if samba.domain_of(n) and samba.domain_of(n) != joined]
    if strangers:
        where = f"joined to {joined}" if joined else "not joined to a domain"
        raise ValidationError({"valid_users": f"{host.name} is {where}: {', '.join(strangers[:3])} cannot sign in."})


def smb_share_delete_start(*, host, user, pk: int, confirm: str) -> Operation:
    row = SmbShare.objects.filter(host=host, pk=pk).first()
    if row is None:
        raise ValidationError({"name": "That share no longer exists."})
    confirmed(confirm, row.name, f"Type the share's name ({row.name}) to remove it.")
    with transaction.atomic():
        row.delete()
        return _shares_apply_start(host, user, f"removed SMB share {row.name}", ["smb"])


def smb_share_folder_start(*, host, user, pk: int, owner: str, group: str, mode: str) -> Operation:
    """Owner, group and mode of a share's root folder: who may write there once Samba lets them in."""
    row = SmbShare.objects.filter(host=host, pk=pk).first()
    if row is None:
        raise ValidationError({"owner": "That share no longer exists."})
    owners, groups = share_folder_accounts(host=host)
    if owner not in owners:
        raise ValidationError({"owner": f"root or one of {host.name}'s Samba users."})
    if group not in groups:
        raise ValidationError({"group": f"{posix.SHARED_GROUP}, root or a Samba user's own group."})
    try:
        posix.check_folder(row.path, owner, group, mode)
    except InvalidShare as exc:
        raise ValidationError(exc.problems) from None
    return operation_start(
        kind="shares.folder",
        subject=row.name,
        host=host,
        user=user,
        params={"path": row.path, "owner": owner, "group": group, "mode": mode},
    )


@operation_runner("shares.folder", lock="smb-share")
def share_folder_run(tracker: Tracker) -> None:
    op = tracker.op
    t = tracker.transport()
    p = op.params
    tracker.progress(100, f"{p['path']}: {posix.set_folder(t, p['path'], p['owner'], p['group'], p['mode'])}")


# Why each risky export is asked about (the field that says yes: NFS_CONFIRMATION_FIELDS).
NFS_RISKS = {
    "everyone": "A client matches every host (*, 0.0.0.0/0, a very short prefix): needs confirmation.",
    "root": "Client root acts as root here (no_root_squash, anonymous uid/gid 0): needs confirmation.",
    "async": "async writes are lost if the server crashes: needs confirmation.",
}


def nfs_export_save_start(*, host, user, data: dict, pk: int | None = None, confirmed=()) -> Operation:
    """confirmed: the risks the admin said yes to ("everyone", "root", "async"); root access is admin-only."""
    row, others = _share_row(NfsExport, host, data, pk)
    if others.filter(path=row.path).exists():
        raise ValidationError({"dataset": f"{row.path} is exported already: add the clients to that export."})
    shares_render(host, nfs_rows=[*others, row])  # every client parsed, every value checked
    risks = nfs.export_risks(_nfs_spec(row))
    errors = {NFS_CONFIRMATION_FIELDS[r]: NFS_RISKS[r] for r in sorted(risks - set(confirmed))}
    if "root" in risks and not (user and user.has_role(Role.ADMIN)):
        errors["squash"] = "Only an admin may let client root act as root here."
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        saved(row, "dataset", f"{row.path} is exported already: add the clients to that export.")
        return _shares_apply_start(host, user, f"NFS export {row.path}", ["nfs"])


def nfs_export_delete_start(*, host, user, pk: int, confirm: str) -> Operation:
    row = NfsExport.objects.filter(host=host, pk=pk).first()
    if row is None:
        raise ValidationError({"path": "That export no longer exists."})
    confirmed(confirm, row.path, f"Type the export's path ({row.path}) to stop exporting it.")
    with transaction.atomic():
        row.delete()
        return _shares_apply_start(host, user, f"removed NFS export {row.path}", ["nfs"])


def share_settings_save_start(*, host, user, data: dict) -> Operation:
    settings = share_settings(host=host)
    for key, value in data.items():
        setattr(settings, key, value)
    shares_render(host, settings=settings)
    with transaction.atomic():
        settings.save()
        return _shares_apply_start(host, user, "share settings", ["smb", "nfs"])


# Server settings base tuning may set (tuning plans, applies and reverts them through these two).
SERVER_SETTINGS = {"smb_min_protocol": ("SMB2", "SMB3"), "smb_multichannel": ("no", "yes"), "nfs_threads": None}


def share_server_setting_apply(t, *, host, key: str, value: str) -> None:
    """Set one server setting and apply what it touches now (inside the caller's operation): testparm → write →
    reload for SMB, nfs.conf for NFS; on a refusal the old files stay and the row is not changed."""
    row = share_settings(host=host)
    allowed = SERVER_SETTINGS.get(key, ())
    if key == "nfs_threads":
        if not is_digits(value) or not 1 <= int(value) <= 256:
            raise ValidationError({"value": "nfsd threads: 1 to 256."})
        row.nfs_threads = int(value)
    elif allowed and value in allowed:
        setattr(row, key, value == "yes" if key == "smb_multichannel" else value)
    else:
        raise ValidationError({"key": f"Not a server setting Tarn tunes: {key}={value}."})
    files = shares_render(host, settings=row)
    if key.startswith("smb_"):
        samba.apply_smb(t, files["smb"])
    else:
        nfs.apply_nfs_conf(t, files["nfs_conf"])
    row.save()


def share_domain_apply(t, *, host, workgroup: str) -> None:
    """A domain joined (its workgroup) or left (""), inside Directory's operation: smbd must serve the domain's
    workgroup, which Tarn's shares file, read after the member settings, would otherwise set back to its own."""
    row = share_settings(host=host)
    row.domain_workgroup = workgroup
    samba.apply_smb(t, shares_render(host, settings=row)["smb"])
    row.save(update_fields=["domain_workgroup"])


@operation_runner("shares.apply", lock="shares")
def shares_apply_run(tracker: Tracker) -> None:
    """Render from the rows, then SMB (testparm → write → reload) and NFS (write → exportfs -ra, nfs.conf)."""
    op = tracker.op
    t = tracker.transport()
    if op.params.get("create"):
        tracker.progress(5, "Creating the share's dataset")
        for argv in op.params["create"]:
            t.run(argv, timeout=600, mutating=True)
        if op.params.get("folder"):
            posix.shared_folder(t, op.params["folder"])
        inventory_refresh(host=op.host, operation=op, scope=Scope.of(op.params.get("scope")))
    files, parts = shares_render(op.host), op.params.get("parts", ["smb", "nfs"])
    smb = exports = conf = False
    if "smb" in parts:
        tracker.progress(20, "Checking the Samba configuration with testparm")
        smb = samba.apply_smb(t, files["smb"])
        for share in SmbShare.objects.filter(host=op.host, preset="private"):
            if not posix.is_mountpoint(t, share.path):  # locked or unmounted: no folder in the empty mountpoint
                tracker.log(f"{share.name}: {share.path} is not mounted; its users' folders wait for it")
                continue
            for name in SambaUser.objects.filter(host=op.host, enabled=True).values_list("username", flat=True):
                posix.user_dir(t, share.path, name)
    if "nfs" in parts:
        tracker.progress(60, "Exporting NFS")
        exports = nfs.apply_exports(t, files["exports"])
        conf = nfs.apply_nfs_conf(t, files["nfs_conf"])
    changed = [w for w, c in (("smb.conf include", smb), ("exports", exports), ("nfs.conf", conf)) if c]
    tracker.progress(100, f"Applied {op.params.get('what', '')}: " + (", ".join(changed) or "nothing changed"))


# --- Samba users: the password travels only in the queued message (operation_start's secret) -----------------
SAMBA_USER_ROW_ACTIONS = ("password", "enable", "disable", "delete")  # what an existing user's row may start
SAMBA_USER_ACTIONS = ("add", *SAMBA_USER_ROW_ACTIONS)


def samba_user_start(*, host, user, action: str, username: str, password: str = "", confirm: str = "") -> Operation:
    """confirm: the user name typed again, to delete."""
    try:
        samba.check_user(username)
        if action in ("add", "password"):
            samba.check_password(password)
    except InvalidShare as exc:
        raise ValidationError(exc.problems) from None
    exists = SambaUser.objects.filter(host=host, username=username).exists()
    if action == "add" and exists:
        raise ValidationError({"username": f"{username} exists already on {host.name}."})
    if action != "add" and not exists:
        raise ValidationError({"username": f"{host.name} has no Samba user {username}."})
    if action not in SAMBA_USER_ACTIONS:
        raise ValidationError({"action": "One of add, password, enable, disable, delete."})
    if action == "delete":
        confirmed(confirm, username, f"Type the user's name ({username}) to delete the account.")
    return operation_start(
        kind=f"shares.samba_user_{action}",
        subject=username,
        host=host,
        user=user,
        params={"action": action, "username": username},
        secret=password or None,
    )


@operation_runner(
    "shares.samba_user_add",
    "shares.samba_user_password",
    "shares.samba_user_enable",
    "shares.samba_user_disable",
    "shares.samba_user_delete",
    lock="samba-user",
)
def samba_user_run(tracker: Tracker) -> None:
    op = tracker.op
    action, name = op.params["action"], op.params["username"]
    t = tracker.transport()
    if action == "add":
        samba.user_add(t, name, tracker.secret or "")
        SambaUser.objects.get_or_create(host=op.host, username=name)
    elif action == "password":
        samba.user_password(t, name, tracker.secret or "")
    elif action in ("enable", "disable"):
        samba.user_enable(t, name, action == "enable")
        SambaUser.objects.filter(host=op.host, username=name).update(enabled=action == "enable")
    elif action == "delete":
        samba.user_delete(t, name)
        SambaUser.objects.filter(host=op.host, username=name).delete()
    tracker.progress(
        100,
        {"add": "Added", "password": "Password set", "enable": "Enabled", "disable": "Disabled", "delete": "Deleted"}[
            action
        ]
        + f": {name}",
    )


def share_status_refresh(*, host, operation=None) -> None:
    t = transport_for(host, operation=operation)
    ShareStatus.objects.update_or_create(
        host=host,
        defaults={
            "smb_sessions": [asdict(s) for s in samba.sessions(t)],
            "nfs_clients": nfs.clients(t),
            "observed_at": timezone.now(),
        },
    )


def share_status_start(*, host, user) -> Operation:
    return operation_start(kind="shares.status", host=host, user=user)


@operation_runner("shares.status", lock="share-status", reads=True)
def share_status_run(tracker: Tracker) -> None:
    share_status_refresh(host=tracker.op.host, operation=tracker.op)
    tracker.progress(100, "Connections read")
