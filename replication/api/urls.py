"""Replication API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from replication.api import views

router = SimpleRouter(trailing_slash=True)
router.register("replication-pairs", views.PairViewSet, basename="replication-pair")
router.register("replication-tasks", views.TaskViewSet, basename="replication-task")
urlpatterns = router.urls
