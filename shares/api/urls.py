"""Share API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from shares.api import views

router = SimpleRouter(trailing_slash=True)
router.register("smb-shares", views.SmbShareViewSet, basename="smb-share")
router.register("nfs-exports", views.NfsExportViewSet, basename="nfs-export")
router.register("samba-users", views.SambaUserViewSet, basename="samba-user")
router.register("share-settings", views.ShareSettingsViewSet, basename="share-settings")
router.register("share-status", views.ShareStatusViewSet, basename="share-status")
urlpatterns = router.urls
