"""Writes for analytics — sampling a host, rollups and pruning of series, the sampler's settings — and for
alerts: evaluate a host's conditions (raise what is new, clear what ended; each raise and clear is
delivered to the channels, one task per channel), rules, channels and their test."""

import ipaddress
from datetime import timedelta
from urllib.parse import urlsplit

from celery import current_app as app
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from analytics import channels, series
from analytics.choices import FIVE_MINUTES, HOUR, RAW, RULE, SAMPLER_LIMITS, ChannelKind
from analytics.models import Alert, Channel, RuleSetting, Sample, SamplerSetting, SamplerState
from analytics.selectors import channels_for, conditions, sampler_setting
from appliance.checks import confirmed
from appliance.connect import transport_for
from appliance.models import Host
from appliance.operations import TargetBusy, Tracker, operation_runner, operation_start
from hostlib.errors import HostError
from hostlib.sampling import sample
from pools.selectors import pool_states
from pools.services import Scope, inventory_refresh


def alerts_evaluate(*, host: Host, now=None, deliver=None) -> tuple[list[Alert], list[Alert]]:
    """Returns (raised, cleared). deliver(alert_id, channel_id, event): queues a delivery (after commit)."""
    deliver = deliver or _queue_delivery
    now = now or timezone.now()
    open_ = {(a.rule, a.subject): a for a in Alert.objects.filter(host=host, cleared_at__isnull=True)}
    holding = {(c.rule, c.subject): c for c in conditions(host, now, frozenset(open_))}
    raised, cleared = [], []
    with transaction.atomic():
        for key, c in holding.items():
            if key not in open_:
                raised.append(
                    Alert.objects.create(
                        host=host, rule=c.rule, subject=c.subject, level=c.level, message=c.message[:500]
                    )
                )
        for key, alert in open_.items():
            if key not in holding:
                alert.cleared_at = now
                alert.save(update_fields=["cleared_at"])
                cleared.append(alert)
        for alert, event in [(a, "raised") for a in raised] + [(a, "cleared") for a in cleared]:
            if _flapping(alert, now):
                alert.deliveries.append(
                    {"channel": "", "event": event, "ok": False, "result": FLAPPING, "at": str(now)}
                )
                alert.save(update_fields=["deliveries"])
                continue
            for channel in channels_for(alert.level):
                transaction.on_commit(lambda a=alert.pk, c=channel.pk, e=event: deliver(a, c, e))
    return raised, cleared


FLAP_WINDOW, FLAP_LIMIT = timedelta(hours=1), 3
FLAPPING = f"Not sent: raised {FLAP_LIMIT} times or more within an hour (flapping); sent again once it is quiet."


def _flapping(alert: Alert, now) -> bool:
    """A rule and subject raised FLAP_LIMIT times within the hour: its raises and clears are shown, not sent, until
    an hour passes without a new one (a limit per rule and subject, so one flapping pool mutes nothing else)."""
    recent = Alert.objects.filter(
        host_id=alert.host_id, rule=alert.rule, subject=alert.subject, raised_at__gte=now - FLAP_WINDOW
    )
    return recent.count() >= FLAP_LIMIT


def _queue_delivery(alert_id: int, channel_id: int, event: str) -> None:
    # The deliver queue's worker runs unprivileged, without Tarn's SSH key (scripts/web.sh deliver).
    app.send_task("analytics.tasks.alert_deliver", args=[alert_id, channel_id, event], queue="deliver")


def alert_deliver(*, alert_id: int, channel_id: int, event: str) -> bool:
    """Send one alert's raise or clear to one channel and record the outcome on both."""
    alert = Alert.objects.select_related("host").filter(pk=alert_id).first()
    channel = Channel.objects.filter(pk=channel_id).first()
    if alert is None or channel is None:
        return False
    ok, result = channels.send(channel, channels.payload(event, alert))
    now = timezone.now()
    Channel.objects.filter(pk=channel.pk).update(last_result=f"{'ok' if ok else 'failed'}: {result}"[:500], last_at=now)
    alert.deliveries.append(
        {"channel": channel.name, "event": event, "ok": ok, "result": result, "at": now.isoformat()}
    )
    Alert.objects.filter(pk=alert.pk).update(deliveries=alert.deliveries)
    return ok


def rule_save(*, key: str, enabled: bool, level: str, threshold: float | None) -> RuleSetting:
    rule = RULE.get(key)
    if rule is None:
        raise ValidationError({"key": "Not a rule."})
    if rule.threshold is None:
        threshold = None
    elif threshold is None or not rule.low <= threshold <= rule.high:
        raise ValidationError({"threshold": f"{rule.title}: {rule.low:g} to {rule.high:g} {rule.unit}."})
    row, _ = RuleSetting.objects.update_or_create(
        key=key, defaults={"enabled": enabled, "level": level, "threshold": threshold}
    )
    return row


def check_channel(channel: Channel) -> None:
    """The rules the form cannot see: a webhook is http(s) without credentials in its URL, and an address that is
    not public only where the channel allows private ones; an e-mail channel has a server, a sender and valid
    recipients."""
    if channel.kind == ChannelKind.WEBHOOK:
        parts = urlsplit(channel.url)
        try:
            parts.port  # noqa: B018 (read for its check: a port out of range raises)
        except ValueError:
            raise ValidationError({"url": "A port from 1 to 65535."}) from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError({"url": "An http:// or https:// URL."})
        if parts.username or parts.password:
            raise ValidationError({"url": "No credentials in the URL: use the shared secret (it signs each body)."})
        try:
            refusal = channels.address_refusal(str(ipaddress.ip_address(parts.hostname)), channel.allow_private)
        except ValueError:  # a host name: resolved (and checked) at each delivery; localhost is known now
            local = parts.hostname.rstrip(".").lower() in ("localhost", "localhost6") or parts.hostname.endswith(
                ".localhost"
            )
            refusal = channels.address_refusal("127.0.0.1", channel.allow_private) if local else None
        if refusal:
            raise ValidationError({"url": refusal})
    else:
        if not channel.smtp_host or not 1 <= channel.smtp_port <= 65535:
            raise ValidationError({"smtp_host": "The SMTP server and a port from 1 to 65535."})
        recipients = [r.strip() for r in channel.recipients.split(",") if r.strip()]
        try:
            validate_email(channel.sender)
            for r in recipients:
                validate_email(r)
        except ValidationError:
            raise ValidationError({"recipients": "The sender and each recipient: an e-mail address."}) from None
        if not recipients:
            raise ValidationError({"recipients": "At least one recipient."})


def without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()


SMTP_SERVER = ("smtp_host", "smtp_port", "smtp_username")


def channel_save(*, data: dict, pk: int | None = None) -> Channel:
    """data: the channel's fields; an empty smtp_password or secret keeps the saved one — but a saved SMTP password
    is never sent to another server: when the host, port or user changes it must be entered again (or, with no
    user any more, it is dropped)."""
    channel = Channel.objects.get(pk=pk) if pk else Channel()
    saved = {f: getattr(channel, f) for f in SMTP_SERVER}
    for key, value in data.items():
        if key in ("smtp_password", "secret") and not value and pk:
            continue
        setattr(channel, key, value)
    if pk and channel.smtp_password and not data.get("smtp_password"):
        if any(getattr(channel, f) != saved[f] for f in SMTP_SERVER):
            if channel.smtp_username:
                raise ValidationError(
                    {
                        "smtp_password": "The SMTP server or user changed: enter the password again (the saved one "
                        "is only ever sent to the server it was entered for)."
                    }
                )
            channel.smtp_password = ""
    check_channel(channel)
    if Channel.objects.filter(name=channel.name).exclude(pk=channel.pk).exists():
        raise ValidationError({"name": f"A channel named {channel.name} exists already."})
    channel.save()
    return channel


def channel_test(*, channel: Channel) -> tuple[bool, str]:
    """Send a test message now (in the request: the admin waits for the answer, bounded by the timeouts)."""
    data = {
        "event": "test",
        "rule": "test",
        "title": "Test",
        "level": "warning",
        "host": None,
        "subject": "",
        "message": f"A test from Tarn's channel {channel.name}.",
        "raised_at": timezone.now().isoformat(),
        "cleared_at": None,
    }
    ok, result = channels.send(channel, data)
    Channel.objects.filter(pk=channel.pk).update(
        last_result=f"{'ok' if ok else 'failed'}: {result}"[:500], last_at=timezone.now()
    )
    return ok, result


def channel_delete(*, channel: Channel, confirm: str) -> bool:
    confirmed(confirm, channel.name, f"Type the channel's name ({channel.name}) to delete it.")
    channel.delete()
    return True


# --- Sampling and series ----------------------------------------------------------------------------------------


def sample_claim(*, host: Host, now=None, seconds: int = 60) -> bool:
    """Mark host as being sampled (one sample at a time per host, across workers); False if one is under way."""
    now = now or timezone.now()
    SamplerState.objects.get_or_create(host=host)
    claimed = (
        SamplerState.objects.filter(host=host)
        .filter(Q(busy_until__isnull=True) | Q(busy_until__lt=now))
        .update(busy_until=now + timedelta(seconds=seconds))
    )
    return bool(claimed)


def sample_take(*, host: Host, transport=None, now=None) -> Sample | None:
    """Sample host once (one command), store the rates since its last sample, keep the counters for the next.
    A host that cannot be reached records why and stores nothing; the next sample starts afresh."""
    now = now or timezone.now()
    setting = sampler_setting()
    state, _ = SamplerState.objects.get_or_create(host=host)
    try:
        counters = sample(transport or transport_for(host, read_only=True))
    except HostError as exc:
        SamplerState.objects.filter(pk=host.pk).update(error=str(exc)[:500], counters={}, busy_until=None)
        return None
    before = state.counters
    fresh = before and 0 < counters["t"] - before.get("t", 0) <= max(60, 5 * setting.interval)
    values = series.rates(before, counters) if fresh else {}
    errors = "; ".join(f"{k}: {v}" for k, v in counters.get("errors", {}).items())
    SamplerState.objects.filter(pk=host.pk).update(counters=counters, at=now, error=errors[:500], busy_until=None)
    _health_changed(host, before.get("health") if before else None, counters.get("health", {}))
    return Sample.objects.create(host=host, at=now, step=RAW, values=series.pack(values)) if values else None


def _health_changed(host: Host, before: dict | None, now: dict) -> None:
    """A pool whose state (or a vdev's) changed since the last sample, or that differs from the inventory, is read
    again at once and the alert rules checked: a degraded pool is mailed within a sample, not the next poll."""
    known = pool_states(host=host)
    changed = sorted(
        p
        for p, (state, vdevs) in now.items()
        if state != known.get(p) or (before is not None and [state, vdevs] != list(before.get(p, ["", {}])))
    )
    if changed:
        try:  # on the host's queue, as every read that writes the inventory
            operation_start(kind="analytics.health", host=host, user=None, params={"pools": changed})
        except TargetBusy:
            return  # an inventory read is queued or running; the next sample looks again


@operation_runner("analytics.health", lock="inventory", reads=True)
def health_changed_run(tracker: Tracker) -> None:
    """Read again the pools whose state a sample saw change, then check the alert rules at once."""
    tracker.progress(10, f"Reading {', '.join(tracker.op.params['pools'])} again: its state changed")
    inventory_refresh(host=tracker.op.host, operation=tracker.op, scope=Scope(pools=tracker.op.params["pools"]))
    alerts_evaluate(host=tracker.op.host)
    tracker.progress(100, "Read again; alert rules checked")


def _bucket(at, step):
    return at.replace(microsecond=0) - timedelta(seconds=int(at.timestamp()) % step, microseconds=0)


def _roll(host: Host, source: int, step: int, start, end) -> int:
    """Average the rows of step `source` in [start, end) into rows of `step` (periods that ended); returns how many."""
    rows = Sample.objects.filter(host=host, step=source, at__gte=start, at__lt=end).order_by("at")
    periods: dict = {}
    for at, values in rows.values_list("at", "values").iterator():
        periods.setdefault(_bucket(at, step), []).append(series.unpack(values))
    made = [Sample(host=host, at=at, step=step, values=series.pack(series.average(v))) for at, v in periods.items()]
    Sample.objects.filter(host=host, step=step, at__in=list(periods)).delete()
    Sample.objects.bulk_create(made)
    return len(made)


def series_maintain(*, now=None) -> dict:
    """Every 5 minutes: average each host's finished 5-minute periods and hours, and drop what is past keeping."""
    now = now or timezone.now()
    setting = sampler_setting()
    made = 0
    for state in SamplerState.objects.select_related("host"):
        end = _bucket(now, FIVE_MINUTES)
        start = state.rolled_up_to or end - timedelta(seconds=setting.raw_hours * 3600)
        if start < end:
            made += _roll(state.host, RAW, FIVE_MINUTES, start, end)
            hour_end = _bucket(end, HOUR)
            made += _roll(state.host, FIVE_MINUTES, HOUR, _bucket(start, HOUR), hour_end)
            SamplerState.objects.filter(pk=state.pk).update(rolled_up_to=end)
    dropped, _ = Sample.objects.filter(step=RAW, at__lt=now - timedelta(hours=setting.raw_hours)).delete()
    old, _ = Sample.objects.filter(step__gt=RAW, at__lt=now - timedelta(days=setting.rollup_days)).delete()
    return {"rolled": made, "dropped": dropped + old}


def sampler_setting_save(*, interval: int, raw_hours: int, rollup_days: int) -> SamplerSetting:
    for name, value in (("interval", interval), ("raw_hours", raw_hours), ("rollup_days", rollup_days)):
        low, high, unit = SAMPLER_LIMITS[name]
        if value is None or not low <= value <= high:
            raise ValidationError({name: f"{name}: from {low} to {high} {unit}."})
    row, _ = SamplerSetting.objects.update_or_create(
        pk=1, defaults={"interval": interval, "raw_hours": raw_hours, "rollup_days": rollup_days}
    )
    return row
