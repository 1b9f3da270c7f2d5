"""The pool page warns when the pool holds encrypted datasets and the host's kernel encrypts with the generic (slow)
AES or GCM implementation, and only then."""

import pytest
from django.utils import timezone

from pools.models import Dataset, Pool

WARNING = "encryption runs several times slower: the CPU's AES instructions are not used"


def encrypted(root: str) -> dict:
    """An encrypted dataset's properties as the inventory records them."""
    return {
        "encryption": {"value": "aes-256-gcm", "source": "local"},
        "encryptionroot": {"value": root, "source": "-"},
        "keystatus": {"value": "available", "source": "-"},
        "keyformat": {"value": "passphrase", "source": "local"},
        "keylocation": {"value": "prompt", "source": "local"},
    }


@pytest.fixture
def pools(local_host):
    """tank with one plain and two encrypted datasets, and fast with only a plain one."""
    now = timezone.now()
    tank = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    fast = Pool.objects.create(host=local_host, name="fast", guid="2", state="ONLINE", observed_at=now)
    off = {"encryption": {"value": "off", "source": "default"}}
    for pool, name, properties in (
        (tank, "tank", off),
        (tank, "tank/secret", encrypted("tank/secret")),
        (tank, "tank/secret/child", encrypted("tank/secret")),
        (fast, "fast", off),
    ):
        Dataset.objects.create(
            host=local_host,
            pool=pool,
            name=name,
            type="filesystem",
            mountpoint=f"/{name}",
            properties=properties,
            observed_at=now,
        )
    return tank, fast


def facts(host, aes: str, gcm: str) -> None:
    host.facts = {**host.facts, "zfs_version": "2.3.2", "aes_impl": aes, "gcm_impl": gcm}
    host.save(update_fields=["facts"])


@pytest.mark.parametrize("aes, gcm", [("generic", "pclmulqdq"), ("aesni", "generic"), ("generic", "generic")])
def test_it_warns_of_the_generic_implementation_on_a_pool_with_encrypted_datasets(
    viewer_client, local_host, pools, aes, gcm
):
    facts(local_host, aes, gcm)
    page = " ".join(viewer_client.get(f"/pools/{pools[0].pk}/").content.decode().split())
    assert 'id="slow-encryption"' in page and "2 encrypted datasets on this pool" in page
    assert f"(AES: {aes}, GCM: {gcm})" in page and WARNING in page


def test_it_does_not_warn_when_the_cpus_aes_instructions_are_used(viewer_client, local_host, pools):
    facts(local_host, "aesni", "avx")
    page = viewer_client.get(f"/pools/{pools[0].pk}/").content.decode()
    assert "slow-encryption" not in page and "AES instructions" not in page


def test_it_does_not_warn_on_a_pool_without_encrypted_datasets(viewer_client, local_host, pools):
    facts(local_host, "generic", "generic")
    page = viewer_client.get(f"/pools/{pools[1].pk}/").content.decode()
    assert "slow-encryption" not in page and "AES instructions" not in page


def test_it_does_not_warn_when_the_host_has_not_been_read_yet(viewer_client, local_host, pools):
    page = viewer_client.get(f"/pools/{pools[0].pk}/").content.decode()
    assert "slow-encryption" not in page
