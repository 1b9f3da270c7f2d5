"""The certificates app: the certificate Tarn's HTTPS front serves (appliance.tls), shown to the admin; one imported
(PEM, checked) in its place; whether browsers trust it (HSTS)."""

from django.apps import AppConfig


class CertificatesConfig(AppConfig):
    name = "certificates"
