"""`tarn_lab_host`: the lab guests registered as SSH hosts from the lab.env files lab/lab.sh writes (TARN_LAB=1 make
run: "lab"; TARN_LAB=2: "lab" and "lab2", the replication pair's two ends). Here no guest answers (ports nobody
listens on): the rows are made all the same and the output says why the facts are missing."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from appliance.models import Host

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


def lab_env(tmp_path, name: str, port: int):
    path = tmp_path / name / "lab.env"
    path.parent.mkdir()
    path.write_text(f"LAB_SSH_HOST=127.0.0.1\nLAB_SSH_PORT={port}\nLAB_SSH_KEY=/nonexistent/id\nLAB_HOST_KEY={KEY}\n")
    return str(path)


@pytest.mark.django_db
def test_it_registers_both_guests_as_lab_and_lab2_and_again_updates_them(tmp_path):
    first, second = lab_env(tmp_path, "tarn-lab", 1), lab_env(tmp_path, "tarn-lab2", 9)
    out = StringIO()
    call_command("tarn_lab_host", first, second, stdout=out)
    rows = {h.name: (h.transport, h.address, h.port, h.host_keys) for h in Host.objects.filter(name__startswith="lab")}
    assert rows == {"lab": ("ssh", "127.0.0.1", 1, KEY), "lab2": ("ssh", "127.0.0.1", 9, KEY)}
    assert "Added host 'lab' (not reachable" in out.getvalue() and "Added host 'lab2' (not reachable" in out.getvalue()
    call_command("tarn_lab_host", first, stdout=(again := StringIO()))
    assert "Updated host 'lab'" in again.getvalue() and Host.objects.filter(name__startswith="lab").count() == 2


@pytest.mark.django_db
def test_a_missing_lab_env_adds_no_host(tmp_path):
    with pytest.raises(CommandError, match="is the lab up"):
        call_command("tarn_lab_host", lab_env(tmp_path, "tarn-lab", 1), str(tmp_path / "none" / "lab.env"))
    assert not Host.objects.filter(name__startswith="lab").exists()
