from django.urls import path

from analytics import views

urlpatterns = [
    path("", views.alert_list, name="alert-list"),
    path("rules/", views.rule_save, name="alert-rule-save"),
    path("channels/add/", views.channel_edit, name="channel-add"),
    path("channels/<int:pk>/", views.channel_edit, name="channel-edit"),
    path("channels/<int:pk>/test/", views.channel_test, name="channel-test"),
    path("channels/<int:pk>/delete/", views.channel_delete, name="channel-delete"),
]
