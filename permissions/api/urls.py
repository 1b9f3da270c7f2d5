"""Permissions API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from permissions.api import views

router = SimpleRouter(trailing_slash=True)
router.register("acls", views.AclViewSet, basename="acl")
router.register("acl-walks", views.AclWalkViewSet, basename="acl-walk")
router.register("quota-uses", views.QuotaUseViewSet, basename="quota-use")
urlpatterns = router.urls
