"""Every URL pattern, walked from the resolver: who may read and who may change."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from analytics.models import Alert, Channel
from appliance.auth import required_role
from appliance.choices import Role
from appliance.models import ApiToken, AuditEntry, Operation
from benchmarks.models import Run, Schedule, Suite
from pools.models import Dataset, Disk, Pool, Snapshot, SnapshotTask
from shares.models import NfsExport, SambaUser, SmbShare
from tuning.models import ChangeSet, Link, Setting

MUTATING = ["POST", "PUT", "PATCH", "DELETE"]
PUBLIC = {"login", "healthz"}
# Changing only one's own session, password or tokens: allowed to viewers on purpose.
VIEWER_WRITABLE = {"logout", "host-switch", "token-list", "token-revoke", "password-change"}


def walk(patterns, namespace=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            ns = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from walk(entry.url_patterns, ns)
        elif isinstance(entry, URLPattern) and entry.name:
            yield f"{namespace}{entry.name}", entry


def all_patterns():
    seen = {}
    for name, pattern in walk(get_resolver().url_patterns):
        seen.setdefault(name, pattern)  # DRF adds format-suffix twins under the same name
    return sorted(seen.items())


@pytest.fixture
def objects(local_host, admin_user):
    op = Operation.objects.create(kind="test", target="t", host=local_host, status="succeeded")
    token = ApiToken.objects.create(user=admin_user, name="x", key_hash="0" * 64, hint="tarn_x")
    entry = AuditEntry.objects.create(kind="request", method="POST", path="/x")
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=timezone.now())
    disk = Disk.objects.create(host=local_host, name="vdb", path="/dev/vdb", media="hdd", observed_at=timezone.now())
    dataset = Dataset.objects.create(
        host=local_host, pool=pool, name="tank/a", type="filesystem", observed_at=timezone.now()
    )
    snapshot = Snapshot.objects.create(dataset=dataset, name="s1", created_at=timezone.now())
    task = SnapshotTask.objects.create(host=local_host, dataset="tank/a", keep_count=3)
    smb = SmbShare.objects.create(host=local_host, name="docs", dataset="tank/a", path="/tank/a")
    nfs = NfsExport.objects.create(host=local_host, dataset="tank/a", path="/tank/a", clients="10.0.0.0/24")
    samba_user = SambaUser.objects.create(host=local_host, username="alice")
    change = ChangeSet.objects.create(host=local_host, kind="tunable", title="vm.swappiness = 10", status="applied")
    setting = Setting.objects.create(
        change_set=change, host=local_host, kind="sysctl", key="vm.swappiness", original="60", value="10", active=True
    )
    link = Link.objects.create(
        host=local_host, name="eth0", kind="ether", mtu=1500, state="UP", observed_at=timezone.now()
    )
    run = Run.objects.create(host=local_host, profile="seq-write-1", title="Sequential write 1M", target="tank/a")
    suite = Suite.objects.create(host=local_host, title="suite", target="tank/a")
    schedule = Schedule.objects.create(host=local_host, name="nightly", profiles=["seq-write-1"], target="tank/a")
    channel = Channel.objects.create(name="ops", kind="webhook", url="https://example.org/hook")
    alert = Alert.objects.create(host=local_host, rule="pool_state", subject="tank", level="critical", message="x")
    return {
        "alert-rule": "capacity_warning",  # before "alert"
        "alert-channel": channel.pk,
        "channel": channel.pk,
        "alert": alert.pk,
        "benchmark-suite": suite.pk,  # before "benchmark"
        "benchmark-schedule": schedule.pk,
        "benchmark": run.pk,
        "tuning-change": change.pk,
        "tuning-setting": setting.pk,
        "change-set": change.pk,
        "tunable": setting.pk,
        "api:link": link.pk,
        "share-settings": local_host.name,
        "share-status": local_host.name,
        "samba-user": samba_user.pk,
        "smb-share": smb.pk,
        "nfs-export": nfs.pk,
        "host": local_host.pk,
        "operation": op.pk,
        "token": token.pk,
        "audit": entry.pk,
        "pool": pool.pk,
        "disk": disk.pk,
        "dataset": dataset.pk,
        "media-speed": "hdd",
        "snapshot-task": task.pk,  # before "snapshot": the first key found in a URL name wins
        "snapshot": snapshot.pk,
    }


def url_for(name, pattern, objects):
    params = list(getattr(pattern.pattern, "converters", {})) or list(pattern.pattern.regex.groupindex)
    params = [p for p in params if p != "format"]
    kwargs = {}
    for param in params:
        key = next(k for k in objects if k in name)
        kwargs[param] = objects[key]
    return reverse(name, kwargs=kwargs)


def cases(objects):
    return [(name, pattern, url_for(name, pattern, objects)) for name, pattern in all_patterns()]


def test_the_walk_covers_pages_and_api(objects):
    names = {name for name, _, _ in cases(objects)}
    assert {"dashboard", "host-detail", "audit-list", "api:host-list", "api:audit-detail", "api:schema"} <= names


def test_anonymous_gets_the_login_page_or_401_everywhere(client, objects):
    for name, _, url in cases(objects):
        if name in PUBLIC:
            continue
        for method in ["GET", *MUTATING]:
            response = client.generic(method, url)
            if name.startswith("api:") or name == "metrics":  # token-authenticated: 401, not a login page
                assert response.status_code == 401, (method, url, response.status_code)
            elif method == "GET" or response.status_code != 403:  # CSRF may refuse anonymous writes first
                assert response.status_code == 302 and response["Location"].startswith("/login/"), (method, url)


def test_a_viewer_may_read_but_gets_403_on_every_mutating_method(viewer_client, objects):
    for name, pattern, url in cases(objects):
        if name in PUBLIC or name in VIEWER_WRITABLE:
            continue
        if required_role(pattern.callback, "GET") == Role.VIEWER:
            assert viewer_client.get(url).status_code in (200, 405), url  # 405: a POST-only endpoint
        for method in MUTATING:
            assert viewer_client.generic(method, url).status_code == 403, (method, url)


def test_only_own_session_and_token_endpoints_are_writable_by_viewers(objects):
    writable = {name for name, pattern, _ in cases(objects) if required_role(pattern.callback, "POST") == Role.VIEWER}
    assert writable == VIEWER_WRITABLE


def test_an_operator_is_refused_admin_only_actions(operator_client, objects):
    admin_only = [
        (name, url) for name, pattern, url in cases(objects) if required_role(pattern.callback, "POST") == Role.ADMIN
    ]
    assert ("host-add", "/hosts/add/") in admin_only
    for _, url in admin_only:
        assert operator_client.post(url).status_code == 403, url
    # API actions whose role depends on the action: adding a host is admin-only there too.
    assert operator_client.post("/api/v1/hosts/", {"name": "x", "address": "127.0.0.1"}).status_code == 403


def test_an_admin_reaches_every_page(admin_client, objects):
    for name, _, url in cases(objects):
        if name in {"logout"}:
            continue
        response = admin_client.get(url)
        assert response.status_code in (200, 405), (url, response.status_code)
