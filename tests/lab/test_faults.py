"""The lab fails loudly and recovers: one-line refusals, a boot that times out, a broken guest reset."""

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.lab import LAB_SH
from tests.support.sshd import free_port

pytestmark = [pytest.mark.lab, pytest.mark.lane(1)]


def lab_sh(*args, env=None, timeout=300):
    return subprocess.run(
        [str(LAB_SH), *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


def test_not_enough_memory_is_one_line_and_a_non_zero_exit(lab):
    result = lab_sh("up", env={"TARN_LAB_MEM": "10000000"})
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0
    assert result.stderr.startswith("lab: not enough memory")


def test_a_guest_that_does_not_answer_in_time_is_killed_and_its_console_shown(lab, tmp_path):
    """A second lab beside the real one (own cache of golden state, run dir, ports, netns) with a 3 s boot limit."""
    cache = tmp_path / "cache"
    cache.mkdir()
    key = hashlib.sha256((LAB_SH.parent / "build.sh").read_bytes()).hexdigest()[:16]
    image = Path(os.environ.get("TARN_LAB_CACHE", "/var/cache/tarn-lab")) / f"image-{key}"  # built by the lab fixture
    (cache / image.name).symlink_to(image)  # the real image, but no saved guest: a cold boot
    env = {
        "TARN_LAB_CACHE": str(cache),
        "TARN_LAB_RUN": str(tmp_path / "run"),
        "TARN_LAB_NETNS": "tarnlabfault",
        "TARN_LAB_TAP": "taplabfault",
        "TARN_LAB_DATA_NET": "10.78.0",  # its own peer address beside the real lab's
        "TARN_LAB_SSH_PORT": str(free_port()),
        "TARN_LAB_SMB_PORT": str(free_port()),
        "TARN_LAB_BOOT_TIMEOUT": "3",
        "TARN_LAB_DISKS": "1",
    }
    result = lab_sh("up", env=env)
    assert result.returncode != 0
    assert "did not answer SSH within 3 s; last console lines:" in result.stderr
    assert not (tmp_path / "run" / "qemu.pid").exists()  # killed, not left running
    assert not list(cache.glob("golden-*"))  # nothing half-made in the cache
    assert subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.count("tarnlabfault") == 0


def test_a_guest_broken_by_a_test_is_whole_again_for_the_next(guest):
    guest.sh("systemctl stop nfs-server smbd; rm -f /usr/sbin/zpool")
    guest.reset()
    assert guest.sh("test -x /usr/sbin/zpool && systemctl is-active smbd").strip() == "active"
