"""Tuning API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from tuning.api import views

router = SimpleRouter(trailing_slash=True)
router.register("links", views.LinkViewSet, basename="link")
router.register("change-sets", views.ChangeSetViewSet, basename="change-set")
router.register("tunables", views.TunableViewSet, basename="tunable")
urlpatterns = router.urls
