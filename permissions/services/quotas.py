"""User, group and project quotas: every filesystem of a host read (one `zfs userspace|groupspace|projectspace` per
dataset and kind) into Tarn's copy, which the usage report, its CSV, its chart and the alerts read; a quota set or
cleared (by id: names are resolved on the host first); a folder given a project (so a project quota caps it). Each is
an Operation; the read also runs every QUOTA_READ_MINUTES."""

import time
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from appliance.checks import host_said
from appliance.connect import transport_for
from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import acl, quotas
from hostlib.errors import HostError
from hostlib.runner import Transport
from permissions.choices import NO_QUOTA, QUOTA_POINT_DAYS, QUOTA_READ_MINUTES, QuotaKind
from permissions.models import QuotaPoint, QuotaReading, QuotaUse
from permissions.services.folders import missing_account, place
from permissions.services.walks import follow
from pools import selectors as pools

LOCK = "quotas"
KINDS = (QuotaKind.USER, QuotaKind.GROUP, QuotaKind.PROJECT)


def _store(host: Host, dataset: str, kind: str, rows: list[quotas.Use], now) -> None:
    """One dataset's listing of one kind into Tarn's copy: new rows made, changed ones updated in place (read_at: when
    its numbers last changed), gone ones removed; a row whose numbers are the same is not written (the steady state
    of 10,000 accounts is a read, not 10,000 updates). When the whole listing was read: QuotaReading."""
    fields = ("used", "quota", "objused", "objquota", "percent")
    have = {  # plain tuples, not model rows: 10,000 of them are read at every reading
        name: (pk, values)
        for pk, name, *values in QuotaUse.objects.filter(host=host, dataset=dataset, kind=kind).values_list(
            "pk", "name", *fields
        )
    }
    fresh, changed = [], []
    for r in rows:
        percent = round(100.0 * r.used / r.quota, 1) if r.quota else NO_QUOTA
        values = [r.used, r.quota, r.objused, r.objquota, percent]
        old = have.pop(r.name, None)
        if old is None:
            fresh.append(
                QuotaUse(
                    host=host,
                    dataset=dataset,
                    kind=kind,
                    name=r.name,
                    read_at=now,
                    **dict(zip(fields, values, strict=True)),
                )
            )
        elif old[1] != values:
            changed.append(QuotaUse(pk=old[0], read_at=now, **dict(zip(fields, values, strict=True))))
    QuotaUse.objects.bulk_create(fresh, batch_size=2000)
    QuotaUse.objects.bulk_update(changed, [*fields, "read_at"], batch_size=500)
    if have:
        QuotaUse.objects.filter(pk__in=[pk for pk, _ in have.values()]).delete()


def _points(host: Host, now) -> None:
    """Today's point per account: its use summed over the host's datasets (replaced by each read of the day)."""
    day = timezone.localdate(now)
    totals = QuotaUse.objects.filter(host=host).values("kind", "name").annotate(total=Sum("used"))
    QuotaPoint.objects.filter(host=host, day=day).delete()
    QuotaPoint.objects.bulk_create(
        [QuotaPoint(host=host, kind=t["kind"], name=t["name"], day=day, used=t["total"] or 0) for t in totals],
        batch_size=2000,
    )
    QuotaPoint.objects.filter(host=host, day__lt=day - timedelta(days=QUOTA_POINT_DAYS)).delete()


def quotas_read(*, host: Host, t: Transport) -> QuotaReading:
    """Every filesystem of the host, each kind: read, stored, today's points, the reading noted."""
    started, now = time.monotonic(), timezone.now()
    names = pools.filesystem_names_on(host=host)
    left_out = 0
    for dataset in names:
        for kind in KINDS:
            rows, left = quotas.space(t, kind, dataset)
            left_out += left
            with transaction.atomic():
                _store(host, dataset, kind, rows, now)
    QuotaUse.objects.filter(host=host).exclude(dataset__in=names).delete()  # datasets gone since
    _points(host, now)
    reading, _ = QuotaReading.objects.update_or_create(
        host=host,
        defaults={"read_at": now, "seconds": time.monotonic() - started, "datasets": len(names), "left_out": left_out},
    )
    return reading


def quotas_read_start(*, host, user) -> Operation:
    return operation_start(kind="permissions.quota_read", host=host, user=user)


@operation_runner("permissions.quota_read", lock=LOCK, queue="host", reads=True)
def quotas_read_run(tracker: Tracker) -> None:
    reading = quotas_read(host=tracker.op.host, t=tracker.transport(read_only=True))
    tracker.progress(
        100, f"Read {reading.datasets} dataset{'s' if reading.datasets != 1 else ''} in {reading.seconds:.1f} s."
    )


def quotas_read_due() -> int:
    """The beat's: every host whose quotas were last read QUOTA_READ_MINUTES ago or more (or never) read again."""
    due = timezone.now() - timedelta(minutes=QUOTA_READ_MINUTES)
    started = 0
    for host in Host.objects.exclude(quota_reading__read_at__gt=due):
        if not pools.filesystem_names_on(host=host):
            continue
        try:
            quotas_read_start(host=host, user=None)
            started += 1
        except ValidationError:  # one already running
            pass
    return started


# --- setting -----------------------------------------------------------------------------------------------------


def _account_id(host: Host, kind: str, name: str) -> tuple[int, str]:
    """The id a quota is set on: a project's number, or a user's or group's id resolved on the host."""
    if kind == QuotaKind.PROJECT:
        try:
            return quotas.project_id(name, "name"), name
        except quotas.InvalidQuota as exc:
            raise ValidationError(exc.problems) from None
    problems: dict[str, str] = {}
    acl.check_name(name, "name", problems)
    if problems:
        raise ValidationError(problems)
    try:
        found = acl.resolve(
            transport_for(host, read_only=True), *(([name], []) if kind == QuotaKind.USER else ([], [name]))
        )
    except HostError as exc:
        raise host_said(exc, "name") from None
    got = found["users" if kind == QuotaKind.USER else "groups"].get(name)
    if got is None:
        raise ValidationError({"name": missing_account(kind, name, host.name)})
    return got[0], got[1]


def quota_set_start(*, host, user, dataset: str, kind: str, name: str, quota="", objquota="") -> Operation:
    """Set (or with both empty, clear) an account's quotas on a dataset. A quota below what it uses now is allowed:
    the operation says that it cannot write until it frees space."""
    if kind not in QuotaKind.values:
        raise ValidationError({"kind": "user, group or project."})
    if pools.filesystem(host=host, name=dataset) is None:
        raise ValidationError({"dataset": f"No filesystem {dataset[:100]!r} on this host."})
    try:
        size, objects = quotas.quota_value(quota, "quota"), quotas.object_quota(objquota, "objquota")
    except quotas.InvalidQuota as exc:
        raise ValidationError(exc.problems) from None
    ident, shown = _account_id(host, kind, name)
    argv = quotas.set_argv(kind, dataset, ident, size, objects)
    now = QuotaUse.objects.filter(host=host, dataset=dataset, kind=kind, name__in={name, shown, str(ident)}).first()
    over = ""
    if now and size is not None and now.used > size:
        over = f" {shown} uses {now.used} bytes, more than the new quota: writes fail (EDQUOT) until {now.used - size} bytes are freed."
    params = {
        "dataset": dataset,
        "kind": kind,
        "name": shown,
        "id": ident,
        "quota": size,
        "objquota": objects,
        "argv": argv,
        "over": over.strip(),
    }
    return operation_start(kind="permissions.quota_set", host=host, user=user, subject=dataset, params=params)


@operation_runner("permissions.quota_set", lock=LOCK, queue="host")
def quota_set_run(tracker: Tracker) -> None:
    p = tracker.op.params
    t = tracker.transport()
    t.run(p["argv"], mutating=True, timeout=60)
    rows, _ = quotas.space(t, p["kind"], p["dataset"])
    with transaction.atomic():
        _store(tracker.op.host, p["dataset"], p["kind"], rows, timezone.now())
    what = "cleared" if p["quota"] is None and p["objquota"] is None else "set"
    tracker.progress(100, f"{p['kind'].capitalize()} {p['name']}'s quota on {p['dataset']} {what}. {p['over']}".strip())


def project_assign_start(*, host, user, dataset: str, path: str, project) -> Operation:
    """Give a folder (and everything inside, and what is made there later) a project id, for a project quota."""
    where = place(host=host, dataset=dataset, path=path)
    if not where.parts:
        raise ValidationError({"path": "A folder inside the dataset (its top folder is the dataset's quota)."})
    try:
        ident = quotas.project_id(project)
    except quotas.InvalidQuota as exc:
        raise ValidationError(exc.problems) from None
    params = {"dataset": where.dataset, "root": where.root, "path": where.path, "project": ident}
    return operation_start(kind="permissions.project_set", host=host, user=user, subject=where.dataset, params=params)


@operation_runner("permissions.project_set", lock=LOCK, queue="host")
def project_assign_run(tracker: Tracker) -> None:
    p, op = tracker.op.params, tracker.op
    t = tracker.transport()
    acl.walk_start(t, op.pk, "project", p["root"], p["path"].split("/"), {"project": p["project"]})
    said = follow(
        tracker, t, op.pk, "project", total=0, save=lambda said: None, stopping=lambda: False, doing="given the project"
    )
    tracker.progress(
        100,
        f"{p['dataset']}/{p['path']} is project {p['project']}: {said.get('folders', 0)} folders and "
        f"{said.get('files', 0)} files ({said.get('changed', 0)} changed; links and hard-linked files left alone).",
    )
