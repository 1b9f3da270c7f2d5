"""The tuning app."""

from django.apps import AppConfig


class TuningConfig(AppConfig):
    name = "tuning"
