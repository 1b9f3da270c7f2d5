"""iSCSI API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from iscsi.api import views

router = SimpleRouter(trailing_slash=True)
router.register("iscsi-targets", views.IscsiTargetViewSet, basename="iscsi-target")
router.register("iscsi-luns", views.IscsiLunViewSet, basename="iscsi-lun")
router.register("iscsi-initiators", views.IscsiInitiatorViewSet, basename="iscsi-initiator")
urlpatterns = router.urls
