from django.urls import path

from pools import views

urlpatterns = [
    path("", views.pool_list, name="pool-list"),
    path("create/", views.pool_create, name="pool-create"),
    path("refresh/", views.inventory_refresh, name="inventory-refresh"),
    path("disks/", views.disk_list, name="disk-list"),
    path("snapshots/", views.snapshot_list, name="snapshot-list"),
    path("<int:pk>/", views.pool_detail, name="pool-detail"),
    path("<int:pk>/destroy/", views.pool_destroy, name="pool-destroy"),
    path("shares/", views.share_list, name="share-list"),
]
