"""Tarn's project package: settings, the root URL map, WSGI and the Celery application.

Importing it makes the Celery app the current one, so the core reaches Celery through `celery.current_app`
and never imports this package.
"""

from tarn.celery import app as celery_app

__all__ = ["celery_app"]
