from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from appliance.api import views
from pools.api import views as pool_views

router = DefaultRouter(trailing_slash=True)
router.register("hosts", views.HostViewSet)
router.register("operations", views.OperationViewSet)
router.register("audit", views.AuditEntryViewSet, basename="audit")
router.register("pools", pool_views.PoolViewSet, basename="pool")
router.register("disks", pool_views.DiskViewSet, basename="disk")
router.register("datasets", pool_views.DatasetViewSet, basename="dataset")
router.register("snapshots", pool_views.SnapshotViewSet, basename="snapshot")
router.register("smb-shares", pool_views.SmbShareViewSet, basename="smb-share")
router.register("nfs-exports", pool_views.NfsExportViewSet, basename="nfs-export")
router.register("samba-users", pool_views.SambaUserViewSet, basename="samba-user")
router.register("share-settings", pool_views.ShareSettingsViewSet, basename="share-settings")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    *router.urls,
]
