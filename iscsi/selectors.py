"""What the iscsi pages and other apps read: a host's targets with their LUNs and initiators, and which zvols LUNs
serve (storage's dependents hook)."""

from django.db.models import Q

from iscsi.models import Lun, Target


def target_list(*, host):
    return Target.objects.filter(host=host).prefetch_related("luns", "initiators")


def lun_users_of(*, host, dataset: str) -> list[str]:
    """Labels of the LUNs serving that zvol or one below it."""
    rows = Lun.objects.filter(host=host).filter(Q(zvol=dataset) | Q(zvol__startswith=f"{dataset}/"))
    return [f"iSCSI LUN {lun.number} of {lun.target.iqn}" for lun in rows.select_related("target")[:20]]
