"""The certificates app: the certificate Tarn's HTTPS front serves (appliance.tls), shown to the admin; one imported
(PEM, checked) in its place; whether browsers trust it (HSTS)."""

from django.apps import AppConfig


class CertificatesConfig(AppConfig):
    name = "certificates"

    def ready(self):
        import certificates.alerts  # noqa: F401, PLC0415 - registers its alert rules with analytics (hooks load in ready())
