from django.urls import path
from django.views.generic import RedirectView

from pools import views

urlpatterns = [
    path("", views.pool_list, name="pool-list"),
    path("create/", views.pool_create, name="pool-create"),
    path("refresh/", views.inventory_refresh, name="inventory-refresh"),
    path("disks/", views.disk_list, name="disk-list"),
    path("snapshots/", views.snapshot_list, name="snapshot-list"),
    path("<int:pk>/", views.pool_detail, name="pool-detail"),
    path("<int:pk>/destroy/", views.pool_destroy, name="pool-destroy"),
    path("<int:pk>/scrub/", views.pool_scrub, name="pool-scrub"),
    path("<int:pk>/export/", views.pool_export, name="pool-export"),
    path("<int:pk>/device/", views.pool_device, name="pool-device"),
    path("<int:pk>/add/", views.pool_add, name="pool-add"),
    path("<int:pk>/trim/", views.pool_trim, name="pool-trim"),
    path("<int:pk>/scrub/schedule/", views.scrub_schedule, name="pool-scrub-schedule"),
    path("import/scan/", views.pool_import_scan, name="pool-import-scan"),
    path("import/", views.pool_import, name="pool-import"),
    path("<int:pk>/datasets/create/", views.dataset_create, name="dataset-create"),
    path("datasets/<int:pk>/", views.dataset_detail, name="dataset-detail"),
    path("datasets/<int:pk>/edit/", views.dataset_edit, name="dataset-edit"),
    path("datasets/<int:pk>/inherit/", views.dataset_inherit, name="dataset-inherit"),
    path("datasets/<int:pk>/rename/", views.dataset_rename, name="dataset-rename"),
    path("datasets/<int:pk>/snapshots/clone/", views.snapshot_clone, name="snapshot-clone"),
    path("datasets/<int:pk>/snapshots/hold/", views.snapshot_hold, name="snapshot-hold"),
    path("datasets/<int:pk>/destroy/", views.dataset_destroy, name="dataset-destroy"),
    path("datasets/<int:pk>/snapshots/create/", views.snapshot_create, name="snapshot-create"),
    path("datasets/<int:pk>/snapshots/rollback/", views.snapshot_rollback, name="snapshot-rollback"),
    path("snapshots/destroy/", views.snapshot_destroy, name="snapshot-destroy"),
    path("schedules/", views.snapshot_task_list, name="snapshot-task-list"),
    path("snapshots/schedules/", RedirectView.as_view(pattern_name="snapshot-task-list")),
    path("schedules/<int:pk>/delete/", views.snapshot_task_delete, name="snapshot-task-delete"),
]
