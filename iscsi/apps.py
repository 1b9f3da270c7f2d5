"""The iscsi app: zvols exported as iSCSI LUNs by the kernel's LIO (targets, their portal, LUNs, the initiators
allowed in with their CHAP secrets, sealed), applied as one configuration a host; registers its zvols with
storage's dependents hook so a zvol a LUN serves is not destroyed or shrunk under it."""

from django.apps import AppConfig


class IscsiConfig(AppConfig):
    name = "iscsi"
    verbose_name = "iSCSI"

    def ready(self):
        from iscsi.selectors import lun_users_of  # noqa: PLC0415 - app registry hooks load in ready()
        from iscsi.services import luns_release  # noqa: PLC0415
        from pools.dependents import dependents_register, releaser_register  # noqa: PLC0415

        dependents_register(lun_users_of)
        releaser_register(luns_release)
