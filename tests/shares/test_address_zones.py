"""An IPv6 zone (fe80::1%eth0) names a link of whichever machine reads it, so an address typed with one means
something else on every host: NFS clients and a host's address refuse it, naming the field (issue 23)."""

import pytest
from django.utils import timezone

from appliance.models import Host, Operation
from pools.models import Dataset, Pool
from shares.models import NfsExport

NFS = {"dataset": "tank/docs", "clients": "10.0.0.0/24", "squash": "root_squash", "sec": "sys"}


@pytest.fixture
def tank(local_host):
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    Dataset.objects.create(
        host=local_host, pool=pool, name="tank/docs", type="filesystem", mountpoint="/tank/docs", observed_at=now
    )
    return pool


@pytest.mark.parametrize("clients", ["fe80::1%eth0", "fe80::%eth0/64", "10.0.0.0/24\nfe80::1%25eth0"])
def test_an_nfs_client_with_a_zone_is_refused_naming_clients(admin_client, tank, clients):
    response = admin_client.post("/shares/nfs/new/", {**NFS, "clients": clients})
    assert "zone" in " ".join(response.context["form"].errors["clients"]), response.context["form"].errors
    assert not NfsExport.objects.exists() and not Operation.objects.exists()


def test_the_api_refuses_an_nfs_client_with_a_zone(admin_client, tank):
    body = {"host": "local", "dataset": "tank/docs", "clients": "fe80::1%eth0"}
    response = admin_client.post("/api/v1/nfs-exports/", body, content_type="application/json")
    assert response.status_code == 400 and "clients" in response.json(), response.content
    assert not NfsExport.objects.exists()


@pytest.mark.parametrize("address", ["fe80::1%eth0", "fe80::1%25eth0"])
def test_a_host_address_with_a_zone_is_refused_naming_address(admin_client, local_host, address):
    body = {"name": "nas9", "address": address}
    response = admin_client.post("/api/v1/hosts/", body, content_type="application/json")
    assert response.status_code == 400 and "address" in response.json(), response.content
    assert not Host.objects.filter(name="nas9").exists()
