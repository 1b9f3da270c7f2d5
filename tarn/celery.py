"""The Celery application: one default queue plus host.<name> and bench.<name> queues per host."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarn.settings")

app = Celery("tarn")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
