"""The home page's panels are kept a moment (TARN_DASHBOARD_SECONDS): 50 people reloading it cost a read each second,
not 50; a panel kept for one role never reaches a user whose role would not show it."""

import time

from appliance.models import Host, Operation


def test_panels_are_read_once_while_kept_and_the_operations_list_stays_live(
    kept, admin_client, local_host, django_assert_max_num_queries, django_assert_num_queries
):
    admin_client.get("/")  # the panels read and kept
    Operation.objects.create(
        kind="appliance.host_probe", target="tarn:new", host=local_host, status="succeeded", message="m"
    )
    with django_assert_max_num_queries(6):  # session, user, policy, hosts, the recent operations: no panel
        page = admin_client.get("/").content.decode()
    assert "tarn:new" in page  # not kept: what just happened is always there


def test_a_viewer_never_gets_the_admins_kept_panel(kept, admin_client, viewer_client):
    assert "Configuration backup" in admin_client.get("/").content.decode()
    assert "Configuration backup" not in viewer_client.get("/").content.decode()
    assert "Configuration backup" in admin_client.get("/").content.decode()


def test_a_kept_panel_shows_a_change_once_its_time_is_up(settings, kept, admin_client, local_host):
    settings.TARN_DASHBOARD_SECONDS = 1
    admin_client.get("/")
    Host.objects.filter(pk=local_host.pk).update(facts_error="ssh: connect to host lab port 22: Connection refused")
    assert "Connection refused" not in admin_client.get("/").content.decode()  # kept
    time.sleep(1.1)
    assert "Connection refused" in admin_client.get("/").content.decode()
