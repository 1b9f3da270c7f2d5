"""The API root (/api/v1/): the schema, its docs and each app's endpoints."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("", include("appliance.api.urls")),
    path("", include("pools.api.urls")),
    path("", include("shares.api.urls")),
    path("", include("tuning.api.urls")),
    path("", include("benchmarks.api.urls")),
    path("", include("analytics.api.urls")),
    path("", include("replication.api.urls")),
    path("", include("health.api.urls")),
    path("", include("encryption.api.urls")),
    path("", include("backups.api.urls")),
    path("", include("certificates.api.urls")),
    path("", include("updates.api.urls")),
    path("", include("directory.api.urls")),
    path("", include("permissions.api.urls")),
]
