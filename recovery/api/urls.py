"""Recovery API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from recovery.api import views

router = SimpleRouter(trailing_slash=True)
router.register("snapshot-files", views.SnapshotFileViewSet, basename="snapshot-file")
router.register("restores", views.RestoreViewSet, basename="restore")
urlpatterns = router.urls
