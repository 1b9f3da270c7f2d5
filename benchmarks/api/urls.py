"""Benchmark API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from benchmarks.api import views

router = SimpleRouter(trailing_slash=True)
router.register("benchmark-runs", views.RunViewSet, basename="benchmark-run")
urlpatterns = router.urls
