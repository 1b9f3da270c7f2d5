"""Certificates API (admins only): the certificate in use; import one in its place; HSTS on or off."""

from dataclasses import asdict

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from appliance.api.base import ACCEPTED, accepted, valid
from appliance.auth.fresh import fresh_factor
from appliance.choices import Role
from certificates import selectors, services
from certificates.api import serializers as s


class CertificateView(APIView):
    """The certificate Tarn's HTTPS front serves."""

    tarn_read_role = Role.ADMIN
    tarn_write_role = Role.ADMIN

    @extend_schema(responses=s.CertificateSerializer)
    def get(self, request):
        current = selectors.certificate_current()
        if current is None:
            raise Http404("No certificate yet: make run makes one at its first start.")
        return Response(s.CertificateSerializer({**asdict(current), "hsts": selectors.front_state().hsts}).data)


class CertificateImportView(APIView):
    """Serve this certificate and key (checked first: the chain, the key, the name)."""

    tarn_read_role = Role.ADMIN
    tarn_write_role = Role.ADMIN

    @extend_schema(request=s.CertificateImportRequest, responses=ACCEPTED)
    @fresh_factor
    def post(self, request):
        d = valid(s.CertificateImportRequest, request).validated_data
        return accepted(
            services.certificate_import_start(
                user=request.user,
                certificate=d["certificate"].encode("ascii", "replace"),
                private_key=d.get("private_key", "").encode("ascii", "replace"),
                name=d["name"].strip(),
            )
        )


class CertificateRequestView(APIView):
    """A certificate signing request: its key made and kept on Tarn, the request to give a CA."""

    tarn_read_role = Role.ADMIN
    tarn_write_role = Role.ADMIN

    @extend_schema(responses=s.CertificateRequestSerializer)
    def get(self, request):
        pem = selectors.request_pem()
        if pem is None:
            raise Http404("No request yet.")
        return Response(s.CertificateRequestSerializer({"csr": pem}).data)

    @extend_schema(request=s.CertificateRequestRequest, responses=ACCEPTED)
    def post(self, request):
        d = valid(s.CertificateRequestRequest, request).validated_data
        return accepted(services.certificate_request_start(user=request.user, names=d["names"]))


class CertificateTrustView(APIView):
    """HSTS on (browsers trust the certificate) or off."""

    tarn_read_role = Role.ADMIN
    tarn_write_role = Role.ADMIN

    @extend_schema(request=s.CertificateTrustRequest, responses=ACCEPTED)
    @fresh_factor
    def post(self, request):
        d = valid(s.CertificateTrustRequest, request).validated_data
        return accepted(services.certificate_trust_start(user=request.user, trusted=d["trusted"]))


class AcmeView(APIView):
    """A certificate from an ACME CA, renewed at 2/3 of its lifetime: its state, or order one now."""

    tarn_read_role = Role.ADMIN
    tarn_write_role = Role.ADMIN

    @extend_schema(responses=s.AcmeSerializer)
    def get(self, request):
        acme = selectors.acme_setting()
        if acme is None:
            raise Http404("ACME is not set up.")
        return Response(s.AcmeSerializer(acme).data)

    @extend_schema(request=s.AcmeRequest, responses=ACCEPTED)
    @fresh_factor
    def post(self, request):
        d = valid(s.AcmeRequest, request).validated_data
        return accepted(services.acme_start(user=request.user, **d))


class AcmeStopView(APIView):
    """No more renewals."""

    tarn_read_role = Role.ADMIN
    tarn_write_role = Role.ADMIN

    @extend_schema(request=None, responses=s.AcmeStopSerializer)
    @fresh_factor
    def post(self, request):
        services.acme_stop(user=request.user)
        return Response({"renew": False})
