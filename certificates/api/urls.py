"""Certificates API routes (mounted under /api/v1/)."""

from django.urls import path

from certificates.api import views

urlpatterns = [
    path("certificate/", views.CertificateView.as_view(), name="certificate"),
    path("certificate/import/", views.CertificateImportView.as_view(), name="certificate-import"),
    path("certificate/trust/", views.CertificateTrustView.as_view(), name="certificate-trust"),
    path("certificate/request/", views.CertificateRequestView.as_view(), name="certificate-request"),
    path("certificate/acme/", views.AcmeView.as_view(), name="certificate-acme"),
    path("certificate/acme/stop/", views.AcmeStopView.as_view(), name="certificate-acme-stop"),
]
