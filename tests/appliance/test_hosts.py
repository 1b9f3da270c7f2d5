"""Adding and probing hosts: field errors with nothing saved, pinned host keys, honest facts."""

from io import StringIO

import pytest
from django.core.management import call_command

from appliance.connect import transport_for
from appliance.models import AuditEntry, Host, Operation
from appliance.services import host_refresh_facts
from hostlib.errors import HostKeyMismatch
from tests.support.sshd import free_port, keygen
from tuning.models import KernelState, Link

GOOD = {"name": "nas1", "address": "127.0.0.1", "port": 22, "username": "root"}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("name", "-rf", "Use lowercase letters"),
        ("name", "NAS 1", "Use lowercase letters"),
        ("address", "nas;reboot", "Enter a hostname or an IP address"),
        ("address", "-oProxyCommand=x", "Enter a hostname or an IP address"),
        ("port", "70000", "less than or equal to 65535"),
        ("port", "0", "greater than or equal to 1"),
        ("username", "root;id", "Not a valid Unix user name"),
        ("identity_file", "etc/ssh/key", "An absolute path to an SSH private key"),
        ("identity_file", "/root/../etc/shadow", "An absolute path to an SSH private key"),
        ("host_keys", "ssh-ed25519 not base64!", "not an SSH public host key"),
    ],
)
def test_bad_input_is_refused_on_its_field_and_nothing_is_saved(admin_client, field, value, message):
    response = admin_client.post("/hosts/add/", {**GOOD, field: value})
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert message in " ".join(errors[field]), errors
    assert not Host.objects.filter(name__in=["nas1", value]).exists()


def test_an_unreachable_host_is_a_clear_error_on_the_address(admin_client, settings):
    settings.TARN_SSH_CONNECT_TIMEOUT = 2
    port = free_port()
    response = admin_client.post("/hosts/add/", {**GOOD, "port": port})
    assert f"no SSH server answered at 127.0.0.1:{port}" in " ".join(response.context["form"].errors["address"])
    assert not Host.objects.filter(name="nas1").exists()


def test_the_api_gives_the_same_field_errors(admin_client):
    response = admin_client.post("/api/v1/hosts/", {**GOOD, "address": "nas;reboot"}, content_type="application/json")
    assert response.status_code == 400
    assert "address" in response.json()
    assert not Host.objects.filter(name="nas1").exists()


@pytest.mark.integration
def test_adding_an_ssh_host_pins_its_key_and_the_worker_logs_in(admin_client, sshd, run_queued):
    # The web only scans the host key; logging in with the private key (root-only) is the probe's, in a worker.
    response = run_queued(
        lambda: admin_client.post("/hosts/add/", {**GOOD, "port": sshd.port, "identity_file": str(sshd.client_key)})
    )
    host = Host.objects.get(name="nas1")
    assert response.status_code == 302 and response["Location"] == f"/hosts/{host.pk}/"
    assert host.host_keys == sshd.host_pub
    op = Operation.objects.get(host=host)
    assert (op.kind, op.status) == ("appliance.host_probe", "succeeded"), op.message
    host.refresh_from_db()
    assert host.facts_error == ""
    assert host.facts["cpus"] >= 1 and host.facts["memory_bytes"] > 0
    assert host.facts["tools"]["ip"] is True
    # the pages' first look at a new host needs no beat: its links and kernel values were read by the probe
    assert Link.objects.filter(host=host).exists() and KernelState.objects.filter(host=host).exists(), op.log


@pytest.mark.integration
@pytest.mark.parametrize("key", ["other", "/etc/hostname"])
def test_a_host_tarn_cannot_log_in_to_says_so_on_its_page(admin_client, sshd, run_queued, tmp_path, key):
    if key == "other":
        keygen(tmp_path / "other")
        key = str(tmp_path / "other")
    run_queued(lambda: admin_client.post("/hosts/add/", {**GOOD, "port": sshd.port, "identity_file": key}))
    host = Host.objects.get(name="nas1")
    op = Operation.objects.get(host=host)
    assert op.status == "failed" and op.message.startswith("Could not log in:"), op.message
    expected = "no readable SSH private key" if key == "/etc/hostname" else "Permission denied"
    assert expected in op.message
    assert "Last probe failed: Could not log in" in admin_client.get(f"/hosts/{host.pk}/").content.decode()


def test_removing_a_host_needs_its_name_and_leaves_the_local_host_alone(admin_client, local_host, operator_client):
    host = Host.objects.create(name="nas9", transport="ssh", address="10.0.0.9", host_keys="ssh-ed25519 AAAA")
    assert operator_client.post(f"/hosts/{host.pk}/remove/", {"confirm": "nas9"}).status_code == 403
    page = admin_client.post(f"/hosts/{host.pk}/remove/", {"confirm": "nas"}, follow=True).content.decode()
    assert "Type the host&#x27;s name, nas9, to remove it." in page and Host.objects.filter(pk=host.pk).exists()
    Operation.objects.create(kind="appliance.host_probe", target="host:nas9", host=host, status="running")
    page = admin_client.post(f"/hosts/{host.pk}/remove/", {"confirm": "nas9"}, follow=True).content.decode()
    assert "still running on nas9" in page and Host.objects.filter(pk=host.pk).exists()
    Operation.objects.filter(host=host).update(status="failed")
    response = admin_client.post(f"/hosts/{host.pk}/remove/", {"confirm": "nas9"})
    assert response.status_code == 302 and not Host.objects.filter(pk=host.pk).exists()
    assert AuditEntry.objects.filter(argv__0="host-remove", host_name="nas9").exists()
    page = admin_client.post(f"/hosts/{local_host.pk}/remove/", {"confirm": "local"}, follow=True).content.decode()
    assert "The local host cannot be removed." in page and Host.objects.filter(pk=local_host.pk).exists()


@pytest.mark.integration
def test_a_host_whose_key_changed_is_refused_and_says_so(db, sshd, tmp_path):
    keygen(tmp_path / "impostor")
    impostor = " ".join((tmp_path / "impostor.pub").read_text().split()[:2])
    host = Host.objects.create(
        name="nas2",
        transport="ssh",
        address="127.0.0.1",
        port=sshd.port,
        identity_file=str(sshd.client_key),
        host_keys=impostor,
    )
    host_refresh_facts(host=host)
    assert "different host key" in host.facts_error

    with pytest.raises(HostKeyMismatch):
        transport_for(host).run(["true"])


def test_the_local_host_exists_from_the_start_and_says_when_zfs_is_missing(admin_client, local_host):
    host_refresh_facts(host=local_host)
    page = admin_client.get(f"/hosts/{local_host.pk}/").content.decode()
    if local_host.has_zfs:
        assert local_host.facts["zfs_version"] in page
    else:
        assert "OpenZFS is not installed on local" in page and "Add a host" not in page.split("OpenZFS is not")[0]


def test_refresh_facts_command_reads_every_host(local_host):

    out = StringIO()
    call_command("tarn_refresh_facts", stdout=out)
    local_host.refresh_from_db()
    assert local_host.observed_at is not None and local_host.facts["cpus"] >= 1
    assert out.getvalue().startswith("local: ")
