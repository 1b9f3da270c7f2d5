"""The encryption app: encrypted datasets and zvols made with a passphrase or a key, keys kept on the NAS and
(if the admin chooses) escrowed sealed in Tarn, lock and unlock of one encryption root or many."""

from django.apps import AppConfig


class EncryptionConfig(AppConfig):
    name = "encryption"

    def ready(self):
        import encryption.alerts  # noqa: F401, PLC0415 - registers its alert rule with analytics (app registry hooks load in ready())
        from appliance.dashboard import dashboard_panel  # noqa: PLC0415
        from appliance.fleet import fleet_column  # noqa: PLC0415
        from encryption import selectors  # noqa: PLC0415

        dashboard_panel(selectors.dashboard_locked)
        fleet_column("locked", "Encryption", selectors.fleet_locked, help="Encryption roots locked now.")
