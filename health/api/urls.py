"""Disk health API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from health.api import views

router = SimpleRouter(trailing_slash=True)
router.register("disk-health", views.DiskHealthViewSet, basename="disk-health")
router.register("self-test-runs", views.SelfTestRunViewSet, basename="self-test-run")
router.register("self-test-schedules", views.SelfTestScheduleViewSet, basename="self-test-schedule")
urlpatterns = router.urls
