"""The ups app: a UPS through NUT on each NAS (plugged in, or served by another NAS as its secondary), its state read
every minute and drawn, alerts when it goes on battery, runs low, loses contact or wants a new battery, and the
shutdown policy that exports the pools before the power goes."""

from django.apps import AppConfig


class UpsConfig(AppConfig):
    name = "ups"
    verbose_name = "UPS"

    def ready(self):
        import ups.alerts  # noqa: F401, PLC0415 - registers its alert rules with analytics (hooks load in ready())
