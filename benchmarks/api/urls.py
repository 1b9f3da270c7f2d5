"""Benchmark API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from benchmarks.api import views

router = SimpleRouter(trailing_slash=True)
router.register("benchmark-runs", views.RunViewSet, basename="benchmark-run")
router.register("benchmark-profiles", views.ProfileViewSet, basename="benchmark-profile")
router.register("benchmark-suites", views.SuiteViewSet, basename="benchmark-suite")
router.register("benchmark-schedules", views.ScheduleViewSet, basename="benchmark-schedule")
urlpatterns = router.urls
