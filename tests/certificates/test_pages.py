"""Issue 41: the certificates page. The certificate in use shown (fingerprint, names, days left); an import refused
with the error under its field and nothing queued; one accepted becomes an Operation whose key is its secret, in no
row, message or audit entry in clear; HSTS is asked for as an Operation too."""

import datetime
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from appliance import tls
from appliance.models import AuditEntry, Operation
from tests.certificates.pki import Pki, key_pem, make

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


def test_nothing_given_asks_for_both(admin_client, data):
    response = admin_client.post("/certificates/import/", {"name": "nas.example.org"})
    errors = response.context["import_form"].errors
    assert errors["certificate"] == ["Paste the certificate or choose its file."]
    assert errors["private_key"] == ["Paste the key or choose its file."]


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
