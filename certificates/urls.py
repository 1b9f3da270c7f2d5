from django.urls import path

from certificates import views

urlpatterns = [
    path("", views.certificate_page, name="certificate-page"),
    path("import/", views.certificate_import, name="certificate-import"),
    path("trust/", views.certificate_trust, name="certificate-trust"),
    path("request/", views.certificate_request, name="certificate-request"),
    path("request.csr", views.certificate_request_download, name="certificate-request-download"),
    path("acme/", views.certificate_acme, name="certificate-acme"),
    path("acme/stop/", views.certificate_acme_stop, name="certificate-acme-stop"),
]
