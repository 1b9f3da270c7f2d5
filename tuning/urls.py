from django.urls import path

from tuning import views

urlpatterns = [
    path("", views.tuning_overview, name="tuning-overview"),
    path("plan/", views.tuning_plan, name="tuning-plan"),
    path("settings/", views.tuning_setting, name="tuning-setting"),
    path("settings/<int:pk>/revert/", views.setting_revert, name="tuning-setting-revert"),
    path("settings/<int:pk>/drift/", views.setting_drift, name="tuning-setting-drift"),
    path("refresh/", views.tuning_refresh, name="tuning-refresh"),
    path("links/mtu/", views.link_mtu, name="tuning-mtu"),
    path("bridges/", views.bridge_create, name="tuning-bridge-create"),
    path("bridges/delete/", views.bridge_delete, name="tuning-bridge-delete"),
    path("bonds/", views.bond_create, name="tuning-bond-create"),
    path("bonds/delete/", views.bond_delete, name="tuning-bond-delete"),
    path("vlans/", views.vlan_create, name="tuning-vlan-create"),
    path("vlans/delete/", views.vlan_delete, name="tuning-vlan-delete"),
    path("changes/<int:pk>/", views.change_detail, name="tuning-change"),
    path("changes/<int:pk>/keep/", views.change_keep, name="tuning-change-keep"),
    path("changes/<int:pk>/revert/", views.change_revert, name="tuning-change-revert"),
]
