"""One path from a page to an Operation: every app's page starts it through appliance.web (start_or_back for a
button, start_on_form for a form kept open on a refusal), which goes to the operation's page or back saying why."""

from django.contrib.messages import get_messages

from appliance.models import Host, Operation
from replication.models import Pair, Task
from tests.pools.conftest import tank  # noqa: F401 (a fixture)
from tests.replication.test_services import host_with
from tests.support.apps import sources_with


def test_no_page_of_any_app_finds_the_operation_page_its_own_way():
    own = sources_with('"operation-detail"', besides="appliance/web.py")
    assert not own, f"start the operation through appliance.web (start_or_back / start_on_form): {own}"


def _said(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_a_button_on_a_read_only_host_goes_back_to_its_page_naming_the_host(admin_client, tank):  # noqa: F811
    pool = tank[0]
    Host.objects.filter(pk=pool.host_id).update(read_only=True)
    response = admin_client.post(f"/pools/{pool.pk}/scrub/", {"action": "start"})
    assert response.status_code == 302 and response["Location"] == pool.get_absolute_url()
    assert _said(response) == ["local is read-only in Tarn: nothing is changed on it."]
    assert not Operation.objects.exists()


def test_a_replication_run_from_a_read_only_source_goes_back_to_the_task_saying_why(admin_client, db):
    source = host_with("nas1", "tank", "tank/docs", snapshots={"tank/docs": ("auto-1",)})
    target = host_with("nas2", "backup", "backup/lab")
    pair = Pair.objects.create(source=source, target=target, address="10.78.0.2", root="backup/lab", status="paired")
    task = Task.objects.create(pair=pair, source_dataset="tank/docs", target_name="docs", pattern="auto-*")
    Host.objects.filter(pk=source.pk).update(read_only=True)
    response = admin_client.post(f"/replication/tasks/{task.pk}/run/")
    assert response.status_code == 302 and response["Location"] == f"/replication/tasks/{task.pk}/"
    assert _said(response) == ["nas1 is read-only in Tarn: nothing is changed on it."]
    Host.objects.filter(pk=source.pk).update(read_only=False)
    started = admin_client.post(f"/replication/tasks/{task.pk}/run/")
    assert started["Location"] == f"/operations/{Operation.objects.get().pk}/"
