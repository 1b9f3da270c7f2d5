"""A share whose dataset is locked or not mounted serves nothing (smbd refuses it, nfsd does not export it): the
shares page and the API say it is off and why, from the inventory, in the same number of queries however many
shares there are (issue 26)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from pools.models import Dataset, Pool
from shares.models import NfsExport, SmbShare

LOCKED = {"encryption": "aes-256-gcm", "encryptionroot": "tank/vault", "keystatus": "unavailable"}
OPEN = {"encryption": "aes-256-gcm", "encryptionroot": "tank/vault", "keystatus": "available"}


def _dataset(host, pool, name, mountpoint=None, **props):
    mountpoint = mountpoint or f"/{name}"
    values = {"mountpoint": mountpoint, **props}
    return Dataset.objects.create(
        host=host,
        pool=pool,
        name=name,
        type="filesystem",
        depth=name.count("/"),
        mountpoint=mountpoint,
        properties={k: {"value": v, "source": "local", "from": ""} for k, v in values.items()},
        observed_at=timezone.now(),
    )


@pytest.fixture
def tank(local_host):
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=timezone.now())
    _dataset(local_host, pool, "tank/docs")
    _dataset(local_host, pool, "tank/vault", **LOCKED)
    return pool


def _share(host, name, dataset):
    SmbShare.objects.create(host=host, name=name, dataset=dataset, path=f"/{dataset}")
    NfsExport.objects.create(host=host, dataset=dataset, path=f"/{dataset}", clients="10.0.0.0/24")


def _session_on(client, host):
    session = client.session
    session["host_id"] = host.pk
    session.save()


def _states(rows):
    return {row.get("name") or row["path"]: (row["offered"], row["off_reason"]) for row in rows}


def test_a_share_on_a_locked_dataset_is_off_on_the_page_and_in_the_api(admin_client, tank):
    host = tank.host
    _share(host, "docs", "tank/docs")
    _share(host, "vault", "tank/vault")
    _session_on(admin_client, host)

    page = admin_client.get("/shares/").content.decode()
    assert page.count('data-offered="no"') == 2  # the SMB share and the NFS export of tank/vault
    assert page.count('data-offered="yes"') == 2
    assert page.count("Off — dataset locked") == 2

    smb = admin_client.get("/api/v1/smb-shares/?host=local").json()["results"]
    assert _states(smb) == {"docs": (True, ""), "vault": (False, "dataset locked")}
    nfs = admin_client.get("/api/v1/nfs-exports/?host=local").json()["results"]
    assert _states(nfs) == {"/tank/docs": (True, ""), "/tank/vault": (False, "dataset locked")}
    vault = SmbShare.objects.get(name="vault")
    assert admin_client.get(f"/api/v1/smb-shares/{vault.pk}/").json()["off_reason"] == "dataset locked"

    Dataset.objects.filter(name="tank/vault").update(properties={"keystatus": {"value": "available"}})
    assert admin_client.get(f"/api/v1/smb-shares/{vault.pk}/").json()["offered"] is True  # unlocked: on again


@pytest.mark.parametrize(
    "mountpoint, props, reason",
    [
        ("none", {}, "dataset not mounted"),
        ("legacy", {}, "dataset not mounted"),
        (None, {**OPEN, "mounted": "no"}, "dataset not mounted"),  # once the inventory reads `mounted`
        (None, {**OPEN, "mounted": "yes"}, ""),
    ],
)
def test_a_share_on_a_dataset_that_is_not_mounted_is_off(admin_client, tank, mountpoint, props, reason):
    _dataset(tank.host, tank, "tank/other", mountpoint, **props)
    SmbShare.objects.create(host=tank.host, name="other", dataset="tank/other", path="/tank/other")
    row = admin_client.get("/api/v1/smb-shares/?host=local").json()["results"][0]
    assert (row["offered"], row["off_reason"]) == (not reason, reason)


def test_a_share_whose_dataset_left_the_inventory_is_not_claimed_to_be_on(admin_client, tank):
    SmbShare.objects.create(host=tank.host, name="gone", dataset="tank/gone", path="/tank/gone")
    row = admin_client.get("/api/v1/smb-shares/?host=local").json()["results"][0]
    assert (row["offered"], row["off_reason"]) == (False, "dataset not found")


def test_marking_shares_costs_the_same_queries_for_two_shares_or_twelve(admin_client, tank):
    host = tank.host
    _share(host, "docs", "tank/docs")
    _share(host, "vault", "tank/vault")
    _session_on(admin_client, host)

    def count(url):
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(url).status_code == 200
        return len(queries)

    urls = ["/shares/", "/api/v1/smb-shares/", "/api/v1/nfs-exports/?host=local"]
    for url in urls:  # the first request of a session also loads what later ones find cached
        count(url)
    few = [count(url) for url in urls]
    for i in range(10):
        _dataset(host, tank, f"tank/d{i}", **(LOCKED if i % 2 else {}))
        _share(host, f"d{i}", f"tank/d{i}")
    many = [count(url) for url in urls]
    assert many == few
    assert admin_client.get("/shares/").content.decode().count("Off — dataset locked") == 2 + 2 * 5
