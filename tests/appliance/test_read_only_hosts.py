"""A host marked read-only in Tarn is refused at start by every kind that changes it, whichever app asks (one check
in operation_start), with a message naming the host; the kinds that only read it still start there."""

import pytest
from django.core.exceptions import ValidationError

from appliance.models import Operation
from appliance.operations import READS, RUNNERS, operation_start
from pools.services.inventory import inventory_refresh_start
from pools.services.pools import pool_scrub_start
from tests.pools.conftest import tank  # noqa: F401 (a fixture)
from tests.support.apps import product_apps


def _declared(reads: bool) -> list[str]:
    kinds = [kind for kind, fn in RUNNERS.items() if fn.__module__.split(".")[0] in product_apps()]
    return sorted(kind for kind in kinds if (kind in READS) == reads)


@pytest.fixture
def read_only(local_host):
    local_host.read_only = True
    local_host.save(update_fields=["read_only"])
    return local_host


def test_the_registry_declares_kinds_of_every_app_and_some_that_only_read():
    changing = _declared(reads=False)
    assert len(changing) > 35 and {kind.split(".")[0] for kind in changing} >= {"encryption", "replication", "backups"}
    assert {"appliance.host_probe", "pools.refresh", "tuning.plan"} <= set(_declared(reads=True))


@pytest.mark.parametrize("kind", _declared(reads=False))
def test_every_kind_that_changes_a_host_is_refused_at_start_on_a_read_only_one(kind, read_only, admin_user):
    with pytest.raises(ValidationError) as refused:
        operation_start(kind=kind, host=read_only, user=admin_user, subject="x")
    assert refused.value.message_dict == {"host": ["local is read-only in Tarn: nothing is changed on it."]}
    assert not Operation.objects.exists()  # nothing saved, nothing queued


@pytest.mark.parametrize("kind", _declared(reads=True))
def test_a_kind_that_only_reads_starts_on_a_read_only_host(kind, read_only, admin_user):
    assert operation_start(kind=kind, host=read_only, user=admin_user, subject="x").host == read_only


def test_a_service_asking_a_change_of_a_read_only_host_is_refused_and_a_refresh_still_runs(
    tank,  # noqa: F811
    read_only,
    admin_user,
):
    with pytest.raises(ValidationError, match="local is read-only in Tarn"):
        pool_scrub_start(host=read_only, user=admin_user, pool="tank", action="start")
    assert inventory_refresh_start(host=read_only, user=admin_user).kind == "pools.refresh"
