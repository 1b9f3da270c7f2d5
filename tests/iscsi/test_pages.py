"""The iSCSI page: empty states that say what to do next; a bad value keeps its form open with the error under the
field and nothing saved; a target shown with its LUN and initiator (the secret never on the page)."""

import pytest
from django.utils import timezone

from iscsi import services
from iscsi.models import Initiator, Lun, Target
from pools.models import Dataset, Pool
from tests.support.runners import FakeHost

IQN = "iqn.2026-11.lan.office:nas1"


@pytest.fixture
def zvol(local_host):
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    return Dataset.objects.create(host=local_host, pool=pool, name="tank/vol1", type="volume", depth=1,
                                  observed_at=now)  # fmt: skip


def test_with_no_target_the_page_says_what_to_do_and_opens_the_form(local_host, operator_client):
    page = operator_client.get("/iscsi/").content.decode()
    assert "No iSCSI target yet" in page and 'id="target-box" open' in page


def test_a_malformed_name_keeps_the_form_open_with_the_error_under_the_field(local_host, operator_client):
    response = operator_client.post("/iscsi/targets/", {"iqn": "iqn.2026-11.local:nas", "portals": "0.0.0.0",
                                                        "enabled": "on"})  # fmt: skip
    page = response.content.decode()
    assert response.status_code == 400
    assert 'id="id_iqn_error"' in page and "two parts" in page and 'id="target-box" open' in page
    assert not Target.objects.exists()


def test_a_target_is_shown_with_its_lun_and_initiator_and_never_its_secret(
    zvol, local_host, operator_client, monkeypatch, django_capture_on_commit_callbacks, admin_user
):
    FakeHost().install(monkeypatch)
    target = Target.objects.create(host=local_host, iqn=IQN, portals=[["10.77.0.2", 3260], ["fd00::2", 3261]])
    Lun.objects.create(host=local_host, target=target, number=0, zvol="tank/vol1", serial="6b1e0c2a")
    services.initiator_save_start(host=local_host, user=admin_user, target=target.pk,
                                  iqn="iqn.1991-05.com.microsoft:client1", chap_user="client1",
                                  chap_secret="InitSecret-001")  # fmt: skip
    page = operator_client.get("/iscsi/").content.decode()
    assert IQN in page and "tank/vol1" in page and "iqn.1991-05.com.microsoft:client1" in page
    assert "InitSecret-001" not in page and Initiator.objects.get().chap_secret not in page
    assert "Portals <code>10.77.0.2:3260</code>, <code>[fd00::2]:3261</code>." in page
    assert ">\n10.77.0.2:3260\n[fd00::2]:3261</textarea>" in page  # its form, as the admin would type them
    api = operator_client.get("/api/v1/iscsi-targets/").json()
    assert api["results"][0]["portals"] == ["10.77.0.2:3260", "[fd00::2]:3261"]
    assert api["results"][0]["initiators"][0]["chap"] == "chap" and "InitSecret-001" not in str(api)
