"""The root URL map: each app's pages, then the API under /api/v1/."""

from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("", include("appliance.urls")),
    path("pools/shares/<path:rest>", RedirectView.as_view(url="/shares/%(rest)s")),  # where shares lived before
    path("pools/shares/", RedirectView.as_view(pattern_name="share-list")),
    path("pools/", include("pools.urls")),
    path("shares/", include("shares.urls")),
    path("tuning/", include("tuning.urls")),
    path("benchmarks/", include("benchmarks.urls")),
    path("replication/", include("replication.urls")),
    path("health/", include("health.urls")),
    path("encryption/", include("encryption.urls")),
    path("backups/", include("backups.urls")),
    path("certificates/", include("certificates.urls")),
    path("updates/", include("updates.urls")),
    path("directory/", include("directory.urls")),
    path("capacity/", include("capacity.urls")),
    path("recovery/", include("recovery.urls")),
    path("iscsi/", include("iscsi.urls")),
    path("ups/", include("ups.urls")),
    path("permissions/", include("permissions.urls")),
    path("", include("analytics.urls")),
    path("", include("analytics.metrics_urls")),
    path("api/v1/", include(("tarn.api", "api"))),
]
