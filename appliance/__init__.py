"""Tarn's core: settings, auth and roles, hosts, operations, audit and the host boundary."""

from appliance.celery import app as celery_app

__all__ = ["celery_app"]
