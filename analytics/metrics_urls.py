"""/metrics at the top level, where Prometheus looks by default."""

from django.urls import path

from analytics.api.views import MetricsView

urlpatterns = [path("metrics", MetricsView.as_view(), name="metrics")]
