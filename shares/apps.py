"""The shares app: registers its dataset users with storage's dependents hook."""

from django.apps import AppConfig


class SharesConfig(AppConfig):
    name = "shares"

    def ready(self):
        from pools.dependents import dependents_register  # noqa: PLC0415 - app registry hooks load in ready()
        from shares.selectors import share_users_of  # noqa: PLC0415

        dependents_register(share_users_of)
