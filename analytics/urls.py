from django.urls import path

from analytics import views

urlpatterns = [
    path("analytics/", views.analytics, name="analytics"),
    path("analytics/sampling/", views.sampler_save, name="analytics-sampler"),
    path("alerts/", views.alert_list, name="alert-list"),
    path("alerts/rules/", views.rule_save, name="alert-rule-save"),
    path("alerts/channels/add/", views.channel_edit, name="channel-add"),
    path("alerts/channels/<int:pk>/", views.channel_edit, name="channel-edit"),
    path("alerts/channels/<int:pk>/test/", views.channel_test, name="channel-test"),
    path("alerts/channels/<int:pk>/delete/", views.channel_delete, name="channel-delete"),
]
