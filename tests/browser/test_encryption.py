"""In a real browser, against the lab's real OpenZFS, with a real Celery worker (so the passphrase travels as the
operation's split secret through the real Redis): an operator makes an encrypted dataset, locks it, is refused with
a wrong passphrase and unlocks it with the right one; the passphrase is then nowhere in Redis."""

import base64
import threading

import pytest
import redis
from django.conf import settings
from playwright.sync_api import expect

from tests.browser.conftest import login_on_lab, shot, wait_for_operation

pytestmark = [pytest.mark.browser, pytest.mark.lab, pytest.mark.lane(1), pytest.mark.django_db(transaction=True)]
CANARY = "canary-browser 6b1e passphrase"


def _forms(secret: str) -> list[str]:
    """The secret as it would show inside a Redis command: itself, and base64 at each of the three alignments it can
    take inside a longer base64 text (Kombu base64-encodes message bodies), the partly encoded edges left off."""
    forms = [secret]
    for pad in range(3):
        text = base64.b64encode(b"x" * pad + secret.encode()).decode()
        forms.append(text[(pad * 4 + 2) // 3 + 1 : -4])
    return forms


class RedisWatch:
    """Every command Redis runs in this session's database while the test runs (MONITOR, which sees every database:
    make test's other runs use their own), from a thread."""

    def __init__(self):
        self.seen: list[str] = []
        # Kept: a client that is collected closes its pool, the monitor's connection with it.
        self._client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        self._db = self._client.connection_pool.connection_kwargs.get("db", 0)
        self._monitor = self._client.monitor()
        self._monitor.__enter__()
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self):
        try:
            for command in self._monitor.listen():
                if command.get("db") == self._db:
                    self.seen.append(str(command.get("command", "")))
        except Exception:  # noqa: BLE001 - the connection closes at the end of the test
            return

    def text(self) -> str:
        return "\n".join(self.seen)


def _redis_text() -> str:
    """Every key and value in the Redis Tarn uses (broker and results), as one text."""
    r = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    parts = []
    for key in r.scan_iter(count=1000):
        kind = r.type(key)
        if kind == b"string":
            parts.append(r.get(key) or b"")
        elif kind == b"list":
            parts += r.lrange(key, 0, -1)
        elif kind == b"hash":
            parts += [*r.hgetall(key).values()]
        elif kind == b"set":
            parts += list(r.smembers(key))
        elif kind == b"zset":
            parts += r.zrange(key, 0, -1)
        parts.append(key)
    return b"\n".join(parts).decode(errors="replace")


def test_make_lock_and_unlock_an_encrypted_dataset(page, lab_worker, guest, tmp_path):
    guest.sh("zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1")
    watch = RedisWatch()
    login_on_lab(page)
    page.goto("/pools/")
    page.click("text=Refresh inventory")
    wait_for_operation(page)

    page.goto("/encryption/")
    assert page.locator("p.empty").count() == 1  # says what to do next
    page.goto("/encryption/new/")
    page.fill("input[name=name]", "tank/vault")
    page.fill("input[name=passphrase]", "short")
    page.fill("input[name=passphrase_confirm]", "short")
    page.click("#encryption-create button:has-text('Create')")
    expect(page.locator("#encryption-create")).to_contain_text("8 to 512 bytes")  # the field's error, nothing made
    page.fill("input[name=passphrase]", CANARY)
    page.fill("input[name=passphrase_confirm]", CANARY)
    page.fill("input[name=pbkdf2iters]", "100000")  # ZFS's least: quicker loads under emulation
    page.click("#encryption-create button:has-text('Create')")
    wait_for_operation(page)

    page.goto("/encryption/")
    assert page.locator("tr[data-root='tank/vault'] [data-key=available]").count() == 1
    page.click("tr[data-root='tank/vault'] button:has-text('Lock')")
    wait_for_operation(page)
    page.goto("/encryption/")
    assert page.locator("tr[data-root='tank/vault'] [data-key=unavailable]").count() == 1
    shot(page, "encryption-01-locked")

    page.check("#unlock-form input[value='tank/vault']")
    page.fill("#unlock-form input[name=secret]", "a wrong passphrase")
    page.click("#unlock-form button:has-text('Unlock')")
    page.wait_for_url("**/operations/*/")
    page.wait_for_selector("#operation-status .badge-failed", timeout=180_000)
    assert "does not fit tank/vault" in page.inner_text("main")

    page.goto("/encryption/")
    page.check("#unlock-form input[value='tank/vault']")
    page.fill("#unlock-form input[name=secret]", CANARY)
    page.click("#unlock-form button:has-text('Unlock')")
    wait_for_operation(page)
    page.goto("/encryption/")
    assert page.locator("tr[data-root='tank/vault'] [data-key=available]").count() == 1
    assert guest.sh("zfs get -H -o value keystatus,mounted tank/vault").split() == ["available", "yes"]
    shot(page, "encryption-02-unlocked")
    assert CANARY not in _redis_text()  # what stays in Redis
    commands = watch.text()  # what went through it: the queued messages (LPUSH) among them
    assert any(f in commands for f in _forms('{"secret": "'))  # the watch sees message bodies: one carried a secret
    assert "LPUSH" in commands and not [f for f in _forms(CANARY) if f in commands]  # …but never the passphrase
    assert CANARY not in (tmp_path / "worker.log").read_text()  # the worker's log (lab_worker's, same tmp_path)
