"""Issue 41: the certificates page. The certificate in use shown (fingerprint, names, days left); an import refused
with the error under its field and nothing queued; one accepted becomes an Operation whose key is its secret, in no
row, message or audit entry in clear; HSTS is asked for as an Operation too."""

import datetime
import json

import pytest
from cryptography import x509
from django.core.files.uploadedfile import SimpleUploadedFile

from appliance import tls
from appliance.models import AuditEntry, Operation
from certificates import services
from tests.certificates.certificate_helpers import sign_request
from tests.certificates.pki import Pki, key_pem, make, pem

pytestmark = pytest.mark.django_db


@pytest.fixture
def data(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "var"
    settings.DATA_DIR.mkdir(mode=0o750)
    return settings.DATA_DIR


@pytest.fixture(scope="module")
def pki():
    return Pki(datetime.datetime.now(datetime.UTC))


def test_the_page_shows_the_certificate_in_use(admin_client, data):
    info, _ = tls.ensure_certificate()
    page = admin_client.get("/certificates/").content.decode()
    assert info.fingerprint in page and "self-signed" in page and "HSTS is off" in page
    assert 'data-days-left="396"' in page or 'data-days-left="397"' in page
    assert "localhost" in page


def test_before_the_first_start_the_page_says_what_makes_one(admin_client, data):
    page = admin_client.get("/certificates/").content.decode()
    assert "No certificate yet" in page and "make run" in page


def _post(client, pki, **over):
    form = {"name": "nas.example.org", "certificate": pki.full.decode(), "private_key": pki.key.decode()} | over
    return client.post("/certificates/import/", form)


def test_a_key_that_is_not_the_certificates_is_said_under_the_key_and_nothing_is_queued(admin_client, data, pki):
    other = key_pem(make("x")[1]).decode()
    response = _post(admin_client, pki, private_key=other)
    assert response.status_code == 400 and not Operation.objects.exists()
    form = response.context["import_form"]
    assert form.errors["private_key"] == ["This key is not the certificate's: its public half differs."]
    assert form["name"].value() == "nas.example.org", "what was typed stays"
    assert other.splitlines()[1] not in response.content.decode(), "never the key: the page is kept by the browser"


def test_a_name_the_certificate_does_not_cover_is_said_under_the_name(admin_client, data, pki):
    response = _post(admin_client, pki, name="nas.other.org")
    errors = response.context["import_form"].errors
    assert response.status_code == 400 and "not for nas.other.org" in errors["name"][0]
    assert errors["private_key"] == ["Give the key again: Tarn never sends it back."]
    assert pki.key.decode().splitlines()[1] not in response.content.decode()


def test_a_one_mib_file_is_refused_by_its_size(admin_client, data, pki):
    big = SimpleUploadedFile("chain.pem", pki.full + b"\n" * (1 << 20))
    response = admin_client.post(
        "/certificates/import/", {"name": "nas.example.org", "certificate_file": big, "private_key": pki.key.decode()}
    )
    assert response.status_code == 400 and not Operation.objects.exists()
    assert response.context["import_form"].errors["certificate_file"][0].endswith("is at most 256 KiB.")


def test_nothing_given_asks_for_the_certificate(admin_client, data):
    response = admin_client.post("/certificates/import/", {"name": "nas.example.org"})
    errors = response.context["import_form"].errors
    assert errors["certificate"] == ["Paste the certificate or choose its file."]


def test_an_accepted_certificate_is_an_operation_whose_key_is_nowhere_in_clear(admin_client, data, pki):
    files = {
        "certificate_file": SimpleUploadedFile("chain.pem", pki.full),
        "private_key_file": SimpleUploadedFile("key.pem", pki.key),
    }
    response = admin_client.post("/certificates/import/", {"name": "nas.example.org", **files})
    op = Operation.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/operations/{op.pk}/"
    assert op.kind == "certificates.import" and op.params["name"] == "nas.example.org"
    assert op.params["certificate"] == pki.full.decode() and op.target == "tarn:tls"
    secret_line = pki.key.decode().splitlines()[1]
    assert secret_line not in json.dumps(op.params) and secret_line not in op.message + op.log
    for entry in AuditEntry.objects.all():
        assert secret_line not in json.dumps(entry.params), entry.params
    page = admin_client.get(f"/operations/{op.pk}/").content.decode()
    assert "Serve the certificate for nas.example.org" in page


def test_the_admin_says_browsers_trust_it_and_hsts_is_an_operation(admin_client, data):
    response = admin_client.post("/certificates/trust/", {"trusted": "on"})
    op = Operation.objects.get()
    assert response.status_code == 302 and op.kind == "certificates.trust" and op.params == {"trusted": True}


def test_the_api_reads_the_certificate_and_refuses_a_bad_import_by_field(admin_client, data, pki):
    assert admin_client.get("/api/v1/certificate/").status_code == 404
    info, _ = tls.ensure_certificate()
    body = admin_client.get("/api/v1/certificate/").json()
    assert body["fingerprint"] == info.fingerprint and body["self_signed"] is True and body["hsts"] is False
    bad = {"name": "nas.example.org", "certificate": pki.full.decode(), "private_key": pki.key.decode() * 2}
    response = admin_client.post("/api/v1/certificate/import/", bad, content_type="application/json")
    assert response.status_code == 400 and "private_key" in response.json() and not Operation.objects.exists()


def test_a_request_is_an_operation_its_names_checked_and_the_certificate_for_it_imports_without_a_key(
    admin_client, data, pki, run_queued, admin_user
):
    """The CSR path: names refused by field; the request made by the (root) runner, its key kept in tls/ (0600) and
    never shown; the certificate a CA signs for it is accepted with the key field empty, one for another key is not."""
    tls.ensure_certificate()
    response = admin_client.post("/certificates/request/", {"names": "nas.example.org bad_name"})
    assert response.status_code == 400 and not Operation.objects.exists()
    assert response.context["request_form"].errors["names"] == ["bad_name: not a host name or an IP address."]
    op = run_queued(services.certificate_request_start, user=admin_user, names="nas.example.org, 192.0.2.10")
    assert op.status == "succeeded", op.message
    key = data / "tls" / "request-key.pem"
    assert key.stat().st_mode & 0o777 == 0o600
    page = admin_client.get("/certificates/").content.decode()
    assert "BEGIN CERTIFICATE REQUEST" in page and "request-key" not in page and "PRIVATE KEY" not in page
    csr = admin_client.get("/certificates/request.csr")
    assert csr["Content-Disposition"] == 'attachment; filename="tarn.csr"'
    request = x509.load_pem_x509_csr(csr.content)
    sans = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["nas.example.org"]
    assert [str(a) for a in sans.get_values_for_type(x509.IPAddress)] == ["192.0.2.10"]

    signed = sign_request(pki, request)
    chain = signed + pem(pki.intermediate[0]) + pem(pki.root[0])
    form = {"name": "nas.example.org", "certificate": chain.decode(), "private_key": ""}
    response = admin_client.post("/certificates/import/", form)
    op = Operation.objects.get(kind="certificates.import")
    assert response.status_code == 302 and op.params["from_request"] is True
    # a certificate for another key, with the key field empty: refused under the key
    response = admin_client.post("/certificates/import/", form | {"certificate": pki.full.decode()})
    errors = response.context["import_form"].errors
    assert errors["private_key"] == [
        "This certificate is not for the request made here (another key): give its own key."
    ]


def test_without_a_request_an_empty_key_is_asked_for(admin_client, data, pki):
    response = _post(admin_client, pki, private_key="")
    assert response.context["import_form"].errors["private_key"][0].startswith("Paste the key or choose its file")
