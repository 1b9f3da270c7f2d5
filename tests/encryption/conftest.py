"""The encryption tests' host: a pool with a locked passphrase root (and a child) and an unlocked root whose hex key
is in a key file on the NAS, as the inventory reads them."""

import pytest
from django.utils import timezone

from appliance.models import Host
from pools.models import Dataset, Pool


def _enc(root: str, key: str = "available", fmt: str = "passphrase", location: str = "prompt") -> dict:
    values = {"encryption": "aes-256-gcm", "encryptionroot": root, "keystatus": key, "keyformat": fmt}
    values["keylocation"] = location
    return {k: {"value": v, "source": "local", "from": ""} for k, v in values.items()}


@pytest.fixture
def host(db):
    host = Host.objects.create(name="nas1", address="10.0.0.5", facts={"zfs_version": "zfs-2.3.2"})
    now = timezone.now()
    pool = Pool.objects.create(host=host, name="tank", guid="1", state="ONLINE", size=4 << 30, observed_at=now)
    for name, props in [
        ("tank", {}),
        ("tank/vault", _enc("tank/vault", "unavailable")),
        ("tank/vault/docs", _enc("tank/vault", "unavailable")),
        ("tank/keyed", _enc("tank/keyed", fmt="hex", location="file:///etc/tarn/keys/tank%keyed.key")),
    ]:
        Dataset.objects.create(host=host, pool=pool, name=name, type="filesystem", properties=props, observed_at=now)
    return host
