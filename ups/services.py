"""UPS changes: the row saved (each value checked by hostlib.nut, with its field named), then one Operation that
writes NUT's files on the host and restarts what reads them; the monitor passwords are made by Tarn, sealed, and
opened only by the worker. A NAS served by another NAS Tarn manages takes that NAS's secondary password as it is
sealed (it is never opened in the web). The state is read every minute by beat into the row and a reading."""

import secrets
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from appliance import vault
from appliance.checks import checked, confirmed, sealed
from appliance.connect import transport_for
from appliance.models import Host, Operation
from appliance.operations import Tracker, operation_runner, operation_start
from hostlib import nut
from hostlib.errors import HostError
from ups.choices import KEEP_DAYS, Mode, Policy
from ups.models import Reading, Ups


def _password() -> str:
    return secrets.token_urlsafe(24)


def ups_save_start(
    *, host, user, name: str, mode: str = Mode.LOCAL, driver: str = "", port: str = "", listen: str = "",
    server: str = "", server_host: Host | None = None, password: str = "", policy: str = Policy.LOW_BATTERY,
    seconds: int = 0,
) -> Operation:  # fmt: skip
    """This NAS's UPS set (or changed) and NUT configured. mode local: driver and port, listen for other NAS;
    mode netclient: server_host (another NAS of Tarn's whose UPS is plugged in and listens) or server and the
    password its admin gave."""
    row = Ups.objects.filter(host=host).first() or Ups(host=host)
    row.name, row.mode, row.policy, row.seconds = name, mode, policy, int(seconds or 0)
    row.driver, row.port, row.listen = (driver, port, listen) if mode == Mode.LOCAL else ("", "", "")
    if mode == Mode.NETCLIENT and server_host is not None:
        primary = Ups.objects.filter(host=server_host, mode=Mode.LOCAL).first()
        if primary is None or not primary.secondary_password:
            raise ValidationError({"server_host": f"{server_host.name} serves no UPS to other NAS: give its UPS "
                                                  "the addresses to listen on first."})  # fmt: skip
        if primary.name != name:
            raise ValidationError({"name": f"{server_host.name}'s UPS is named {primary.name}."})
        row.server, row.password = server_host.address, primary.secondary_password  # sealed as it is
    elif mode == Mode.NETCLIENT:
        row.server = server
        if password:
            row.password = sealed(password, "password")
        elif not row.password:
            raise ValidationError({"password": "The password the serving NAS's admin gave for its secondaries."})
    elif not row.password or not row.pk or Ups.objects.get(pk=row.pk).mode != Mode.LOCAL:
        row.password = sealed(_password(), "password")
    if mode == Mode.LOCAL and listen.split() and not row.secondary_password:
        row.secondary_password = sealed(_password(), "listen")
    # The sealed passwords are the worker's to open: the one typed, or a stand-in of the same shape, is checked here.
    typed = password if row.mode == Mode.NETCLIENT and password else _password()
    listen_ = tuple(row.listen.split())
    checked(lambda: nut.Ups(row.name, row.mode, typed, row.driver, row.port, row.server, listen_,
                            _password() if row.secondary_password else "", row.policy, row.seconds).check())  # fmt: skip
    with transaction.atomic():
        row.save()
        return operation_start(kind="ups.apply", host=host, user=user, params={"what": f"UPS {row.name}"})


def ups_remove_start(*, host, user, confirm: str) -> Operation:
    row = Ups.objects.filter(host=host).first()
    if row is None:
        raise ValidationError({"name": f"{host.name} has no UPS."})
    confirmed(
        confirm, row.name, f"Type the UPS's name ({row.name}) to stop watching it: nothing shuts the NAS down then."
    )
    with transaction.atomic():
        row.delete()
        return operation_start(kind="ups.apply", host=host, user=user, params={"what": f"removal of UPS {row.name}"})


def description(row: Ups) -> nut.Ups:
    """The row as hostlib takes it, passwords opened (the worker's alone)."""
    try:
        opened = vault.unseal(row.password), vault.unseal(row.secondary_password) if row.secondary_password else ""
    except vault.VaultError as exc:
        raise HostError(f"the UPS's monitor password does not open ({exc}): save the UPS again") from None
    return nut.Ups(row.name, row.mode, opened[0], row.driver, row.port, row.server, tuple(row.listen.split()),
                   opened[1], row.policy, row.seconds)  # fmt: skip


@operation_runner("ups.apply", lock="ups")
def ups_apply_run(tracker: Tracker) -> None:
    host, t = tracker.op.host, tracker.transport()
    row = Ups.objects.filter(host=host).first()
    if row is None:
        tracker.progress(50, "Turning NUT off")
        nut.disable(t)
        tracker.progress(100, f"Applied {tracker.op.params.get('what', '')}: NUT is off")
        return
    tracker.progress(20, "Writing NUT's configuration")
    changed = nut.apply(t, description(row))  # InvalidUps is a HostError: the operation says it
    tracker.progress(80, "Reading the UPS")
    ups_read(host=host)
    row.refresh_from_db()
    state = f"reads {', '.join(row.status) or 'nothing yet'}" if not row.error else f"not read yet ({row.error})"
    tracker.progress(
        100, f"Applied {tracker.op.params.get('what', '')} ({', '.join(changed) or 'unchanged'}); it {state}"
    )


def ups_read(*, host) -> Ups | None:
    """The UPS's state now into its row and a reading (a failed read: the row's error, for the contact-lost alert)."""
    row = Ups.objects.filter(host=host).first()
    if row is None:
        return None
    now = timezone.now()
    try:
        found = nut.read(
            transport_for(host, read_only=True), row.name, row.server if row.mode == Mode.NETCLIENT else ""
        )
    except HostError as exc:
        Ups.objects.filter(pk=row.pk).update(error=str(exc)[:300], status=[], read_at=now)
        return row
    Ups.objects.filter(pk=row.pk).update(status=found.status, charge=found.charge, runtime=found.runtime,
                                         load=found.load, error="", read_at=now)  # fmt: skip
    Reading.objects.create(ups=row, at=now, status=" ".join(found.status)[:64], charge=found.charge,
                           runtime=found.runtime, load=found.load)  # fmt: skip
    return row


def ups_read_all() -> int:
    hosts = Host.objects.filter(ups__isnull=False)
    for host in hosts:
        ups_read(host=host)
    Reading.objects.filter(at__lt=timezone.now() - timedelta(days=KEEP_DAYS)).delete()
    return len(hosts)
