"""Encryption API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from encryption.api import views

router = SimpleRouter(trailing_slash=True)
router.register("encryption-roots", views.EncryptionRootViewSet, basename="encryption-root")
router.register("key-exports", views.KeyExportViewSet, basename="key-export")
router.register("retired-keys", views.RetiredKeyViewSet, basename="retired-key")
urlpatterns = router.urls
