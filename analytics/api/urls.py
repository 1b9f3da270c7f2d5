"""Analytics and alert API routes (mounted under /api/v1/)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from analytics.api import views

router = SimpleRouter(trailing_slash=True)
router.register("alerts", views.AlertViewSet, basename="alert")
router.register("alert-channels", views.ChannelViewSet, basename="alert-channel")
router.register("alert-rules", views.RuleViewSet, basename="alert-rule")
urlpatterns = [
    path("analytics/", views.AnalyticsView.as_view(), name="analytics"),
    path("analytics/sampling/", views.SamplerSettingView.as_view(), name="analytics-sampling"),
    *router.urls,
]
