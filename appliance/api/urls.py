from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from appliance.api import views

router = DefaultRouter(trailing_slash=True)
router.register("hosts", views.HostViewSet)
router.register("operations", views.OperationViewSet)
router.register("audit", views.AuditEntryViewSet, basename="audit")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    *router.urls,
    path("", include("pools.api.urls")),
    path("", include("shares.api.urls")),
    path("", include("tuning.api.urls")),
    path("", include("benchmarks.api.urls")),
    path("", include("analytics.api.urls")),
]
