"""Storage API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from pools.api import views

router = SimpleRouter(trailing_slash=True)
router.register("pools", views.PoolViewSet, basename="pool")
router.register("disks", views.DiskViewSet, basename="disk")
router.register("datasets", views.DatasetViewSet, basename="dataset")
router.register("snapshots", views.SnapshotViewSet, basename="snapshot")
router.register("snapshot-tasks", views.SnapshotTaskViewSet, basename="snapshot-task")
router.register("media-speeds", views.MediaSpeedViewSet, basename="media-speed")
urlpatterns = router.urls
