"""Native encryption's status, read from the lab's real OpenZFS: an encrypted dataset and its child (one encryption
root), what the inventory keeps of them, locked once the key is unloaded, and the kernel's AES and GCM
implementations in the host's facts (issue 26, its first part: status everywhere)."""

import pytest

from appliance.services import host_refresh_facts
from pools.models import Dataset
from pools.services import inventory_refresh

pytestmark = pytest.mark.lab
DISK = "/dev/disk/by-id/virtio-zfsdisk1"


def test_an_encrypted_dataset_shows_its_root_key_and_lock_on_the_pages_and_the_api(guest, lab_host, admin_client):
    guest.sh(
        f"zpool create -f tank {DISK} && printf 'correct horse battery staple' > /root/tank.key && chmod 600 /root/tank.key"
        " && zfs create -o encryption=on -o keyformat=passphrase -o keylocation=file:///root/tank.key tank/secret"
        " && zfs create tank/secret/child && zfs create tank/plain"
    )
    inventory_refresh(host=lab_host)
    rows = {d.name: d for d in Dataset.objects.filter(host=lab_host)}
    assert rows["tank/secret"].encryption == {
        "cipher": "aes-256-gcm",
        "root": "tank/secret",
        "key": "available",
        "format": "passphrase",
        "location": "file:///root/tank.key",
    }
    assert rows["tank/secret/child"].encryption["root"] == "tank/secret"
    assert rows["tank/plain"].encryption == {} and not rows["tank"].encryption

    guest.sh("zfs unmount tank/secret && zfs unload-key -r tank/secret")
    inventory_refresh(host=lab_host)
    secret = Dataset.objects.get(host=lab_host, name="tank/secret")
    assert secret.locked and Dataset.objects.get(host=lab_host, name="tank/secret/child").locked
    session = admin_client.session
    session["host_id"] = lab_host.pk
    session.save()
    page = admin_client.get(f"/pools/datasets/{secret.pk}/").content.decode()
    assert 'data-key="unavailable"' in page and "aes-256-gcm" in page and "file:///root/tank.key" in page
    assert page.count('data-key="unavailable"') == 1
    pool = admin_client.get(f"/pools/{secret.pool_id}/").content.decode()
    assert pool.count('data-key="unavailable"') == 2  # the root and its child
    api = admin_client.get(f"/api/v1/datasets/{secret.pk}/").json()
    assert api["encryption"]["key"] == "unavailable" and api["encryption"]["root"] == "tank/secret"
    assert admin_client.get(f"/api/v1/datasets/{rows['tank/plain'].pk}/").json()["encryption"] is None

    host_refresh_facts(host=lab_host)
    lab_host.refresh_from_db()
    assert lab_host.facts["aes_impl"] in ("aesni", "x86_64", "generic")
    assert lab_host.facts["gcm_impl"] in ("avx", "pclmulqdq", "generic")
