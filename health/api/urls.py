"""Disk health API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from health.api import views

router = SimpleRouter(trailing_slash=True)
router.register("disk-health", views.DiskHealthViewSet, basename="disk-health")
urlpatterns = router.urls
