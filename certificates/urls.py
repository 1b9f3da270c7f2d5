from django.urls import path

from certificates import views

urlpatterns = [
    path("", views.certificate_page, name="certificate-page"),
    path("import/", views.certificate_import, name="certificate-import"),
    path("trust/", views.certificate_trust, name="certificate-trust"),
]
