"""Capacity API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from capacity.api import views

router = SimpleRouter(trailing_slash=True)
router.register("capacity-forecasts", views.ForecastViewSet, basename="capacity-forecast")
urlpatterns = router.urls
