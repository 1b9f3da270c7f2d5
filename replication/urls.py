"""Replication pages."""

from django.urls import path

from replication import views

urlpatterns = [
    path("", views.replication_list, name="replication-list"),
    path("pairs/new/", views.pair_new, name="replication-pair-new"),
    path("pairs/<int:pk>/unpair/", views.pair_unpair, name="replication-unpair"),
    path("pairs/<int:pk>/quota/", views.pair_quota, name="replication-pair-quota"),
    path("pairs/<int:pk>/reviewed/", views.pair_reviewed, name="replication-pair-reviewed"),
    path("tasks/new/", views.task_new, name="replication-task-new"),
    path("tasks/<int:pk>/", views.task_detail, name="replication-task"),
    path("tasks/<int:pk>/run/", views.task_run, name="replication-task-run"),
    path("tasks/<int:pk>/delete/", views.task_delete, name="replication-task-delete"),
    path("tasks/<int:pk>/retention/", views.task_retention, name="replication-task-retention"),
    path("tasks/<int:pk>/resume-pruning/", views.task_resume_pruning, name="replication-task-resume-pruning"),
    path("tasks/<int:pk>/failover/", views.task_failover, name="replication-task-failover"),
    path("tasks/<int:pk>/restore/", views.task_restore, name="replication-task-restore"),
]
