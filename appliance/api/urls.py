"""The core's API: hosts, the fleet, operations and the audit log."""

from rest_framework.routers import DefaultRouter

from appliance.api import views

router = DefaultRouter(trailing_slash=True)
router.register("hosts", views.HostViewSet)
router.register("operations", views.OperationViewSet)
router.register("audit", views.AuditEntryViewSet, basename="audit")
router.register("fleet", views.FleetViewSet, basename="fleet")

urlpatterns = router.urls
