"""UPS API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from ups.api import views

router = SimpleRouter(trailing_slash=True)
router.register("ups", views.UpsViewSet, basename="ups")
urlpatterns = router.urls
