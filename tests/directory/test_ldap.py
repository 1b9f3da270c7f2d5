"""An LDAP directory through sssd, over a FakeHost that answers ldapsearch, sssctl and getent with what they printed
in the lab against its slapd (tests/fixtures/host/directory/ldap_*, captured by tests/support/capture_directory.py):
set-up (the first search before anything changes, the files and their modes, the password's path), its refusals and
the files put back, the checks and their alerts, the names' copy, removal, the page and the API. The lab proves the
effects (tests/lab/test_directory.py)."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from analytics.services import alerts_evaluate
from appliance.models import Host, OperationSecret
from directory import services
from directory.models import DirectoryName, DomainMember, LdapDirectory
from hostlib.configfiles import HEADER
from hostlib.sssd import BIND_FILE, CA_FILE, CA_STAGE, CHECK_FILE, SSSD_CONF, LdapSpec, search_argv
from tests.directory.test_directory import CAPTURED, said
from tests.hostlib.test_sssd import CA
from tests.support.runners import FakeHost

PASSWORD = "Bind-Pass'word;$(x)"
LDAP = {
    "uri": "ldap://10.78.0.2:1389",
    "base_dn": "dc=ldap,dc=tarn,dc=test",
    "bind_dn": "cn=nas,dc=ldap,dc=tarn,dc=test",
    "bind_password": PASSWORD,
    "ca_pem": CA,
}


@pytest.fixture
def host(db):
    return Host.objects.create(name="nas1", address="10.0.0.5")


@pytest.fixture
def fake(monkeypatch):
    fake = FakeHost()
    fake.files["/etc/nsswitch.conf"] = (CAPTURED / "nsswitch.conf").read_text()
    fake.answer("which", "sssd", stdout="/usr/sbin/sssd\n/usr/sbin/sssctl\n/usr/bin/ldapsearch\n")
    fake.answer("ldapsearch", stdout=said("ldap_users.ldif")[0])
    answer_groups(fake)
    fake.answer("sssctl", "config-check", stdout=said("ldap_config_check.txt")[0])
    fake.answer("systemctl", "is-active", "sssd", stdout=said("ldap_sssd_active.txt")[0])
    fake.answer("getent", "-s", "sss", "passwd", stdout=said("ldap_getent_carol.txt")[0])
    return fake.install(monkeypatch)


def answer_groups(fake):
    """The group searches (with the password on stdin, and from the bind file) answered with the captured groups: the
    users' answer matches every ldapsearch, and the latest matching answer wins."""
    spec = LdapSpec(uri=LDAP["uri"], base_dn=LDAP["base_dn"], ca_pem=CA, bind_dn=LDAP["bind_dn"])
    for password in (PASSWORD, None):
        fake.answer(*search_argv(spec, groups=True, password=password), stdout=said("ldap_groups.ldif")[0])


def configured(host, run_queued, admin_user, **extra):
    return run_queued(services.ldap_configure_start, host=host, user=admin_user, **{**LDAP, **extra})


def test_set_up_searches_first_writes_sssd_conf_0600_and_the_password_only_to_the_host(
    host, fake, run_queued, admin_user
):
    op = configured(host, run_queued, admin_user)
    assert op.status == "succeeded", op.message
    searches = [c for c in fake.calls if c.argv[0] == "ldapsearch"]
    first = searches[0]
    assert first.argv[first.argv.index("-y") + 1] == "/dev/stdin" and first.text == PASSWORD  # stdin, never argv
    assert "-ZZ" in first.argv and first.argv[first.argv.index("-H") + 1] == "ldap://10.78.0.2:1389"
    assert not any(PASSWORD in " ".join(a) for a in fake.argvs)
    assert not OperationSecret.objects.exists() and PASSWORD not in json.dumps(op.params) + op.log + op.message
    # sssctl checked a copy before sssd.conf was written; sssd.conf and the bind file root's only
    order = [c.argv[:2] for c in fake.calls if c.argv[0] in ("write_file", "sssctl")]
    assert order.index(["write_file", CHECK_FILE]) < order.index(["sssctl", "config-check"])
    assert order.index(["sssctl", "config-check"]) < order.index(["write_file", SSSD_CONF])
    modes = {c.argv[1]: c.argv[2] for c in fake.calls if c.argv[0] == "write_file"}
    assert modes[SSSD_CONF] == "600" and modes[BIND_FILE] == "600" and modes[CA_FILE] == "644"
    assert fake.files[BIND_FILE] == PASSWORD and CHECK_FILE not in fake.files
    assert "ldap_tls_reqcert = demand" in fake.files[SSSD_CONF] and fake.files[CA_FILE].strip() == CA.strip()
    assert " sss" in fake.files["/etc/nsswitch.conf"].split("passwd:")[1].splitlines()[0]
    assert ["systemctl", "restart", "sssd"] in fake.argvs and ["systemctl", "enable", "sssd"] in fake.argvs
    row = LdapDirectory.objects.get(host=host)
    assert row.healthy and row.bind_dn == LDAP["bind_dn"] and row.configured_by == admin_user.username
    users = set(DirectoryName.objects.filter(host=host, kind="user").values_list("name", flat=True))
    groups = set(DirectoryName.objects.filter(host=host, kind="group").values_list("name", flat=True))
    assert users == {"carol", "dave"} and groups == {"nfsstaff"} and row.names_left_out == 1  # o'brien


def test_a_certificate_the_ca_does_not_sign_fails_the_first_search_and_leaves_nothing(
    host, fake, run_queued, admin_user
):
    nsswitch = fake.files["/etc/nsswitch.conf"]
    stdout, stderr = said("ldap_wrong_ca.txt")
    fake.answer("ldapsearch", stdout=stdout, stderr=stderr, returncode=255)
    op = configured(host, run_queued, admin_user)
    assert op.status == "failed" and "did not list its users" in op.message, op.message
    assert "ldap_start_tls" in op.message or "certificate" in op.message.lower(), op.message
    assert not {CA_FILE, CA_STAGE, SSSD_CONF, BIND_FILE} & set(fake.files)
    assert fake.files["/etc/nsswitch.conf"] == nsswitch
    assert not any(a[0] == "systemctl" for a in fake.argvs)  # sssd left as it was
    assert not LdapDirectory.objects.exists() and not OperationSecret.objects.exists()


def test_sssctl_refusing_the_file_keeps_the_old_sssd_conf_and_ca_live(host, fake, run_queued, admin_user):
    old = HEADER + "[sssd]\n# Tarn's last one\n"
    fake.files.update({SSSD_CONF: old, CA_FILE: "the CA in use\n"})
    fake.answer("sssctl", "config-check", stdout="Issues identified by validators: 1\n[rule/x]: bad\n", returncode=1)
    op = configured(host, run_queued, admin_user)
    assert op.status == "failed" and "sssctl refused" in op.message, op.message
    assert fake.files[SSSD_CONF] == old and fake.files[CA_FILE] == "the CA in use\n"
    assert CHECK_FILE not in fake.files and CA_STAGE not in fake.files and not LdapDirectory.objects.exists()
    assert not any(a[:2] == ["systemctl", "restart"] for a in fake.argvs)  # sssd was never touched


def test_an_sssd_conf_tarn_did_not_write_is_refused_never_replaced(host, fake, run_queued, admin_user):
    fake.files[SSSD_CONF] = "[sssd]\ndomains = ipa.example.com\n"
    op = configured(host, run_queued, admin_user)
    assert op.status == "failed" and "is not Tarn's" in op.message, op.message
    assert fake.files[SSSD_CONF] == "[sssd]\ndomains = ipa.example.com\n" and CA_STAGE not in fake.files
    assert not any(c.argv[0] == "ldapsearch" for c in fake.calls)


def test_the_first_search_tests_the_new_ca_beside_the_one_in_use(host, fake, run_queued, admin_user):
    fake.files[CA_FILE] = "the CA in use\n"
    seen = []
    fake.on("ldapsearch", call=lambda argv: seen.append(fake.files.get(CA_FILE)))
    assert configured(host, run_queued, admin_user).status == "succeeded"
    envs = [env for argv, env in fake.environments if argv[0] == "ldapsearch"]
    assert envs[0]["LDAPTLS_CACERT"] == CA_STAGE and envs[1]["LDAPTLS_CACERT"] == CA_STAGE
    assert seen[:2] == ["the CA in use\n"] * 2  # sssd's CA untouched while the new one is tested
    assert fake.files[CA_FILE].strip() == CA.strip() and CA_STAGE not in fake.files


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"uri": "ldap://x\nldap_tls_reqcert = never"}, "uri"),
        ({"uri": "ldaps://ldap.lab"}, "tls"),
        ({"base_dn": "dc=x\nenumerate = true"}, "base_dn"),
        ({"bind_password": ""}, "bind_password"),
        ({"ca_pem": "-----BEGIN CERTIFICATE-----\nnot\n"}, "ca_pem"),
    ],
)
def test_bad_settings_are_refused_on_their_field_and_nothing_starts(host, fake, admin_user, changes, field):
    with pytest.raises(ValidationError) as caught:
        services.ldap_configure_start(host=host, user=admin_user, **{**LDAP, **changes})
    assert field in caught.value.message_dict
    assert fake.calls == []


def test_one_directory_per_host_a_domain_or_ldap(host, fake, admin_user, run_queued):
    DomainMember.objects.create(
        host=host, realm="LAB.TEST", workgroup="LAB", netbios_name="NAS", backend="rid", joined_at=timezone.now()
    )
    with pytest.raises(ValidationError, match="in the domain LAB.TEST"):
        services.ldap_configure_start(host=host, user=admin_user, **LDAP)
    DomainMember.objects.all().delete()
    assert configured(host, run_queued, admin_user).status == "succeeded"
    with pytest.raises(ValidationError, match="reads the LDAP directory"):
        services.member_join_start(
            host=host,
            user=admin_user,
            realm="LAB.TEST",
            workgroup="LAB",
            default_range=services.joins.IdRange(100000, 199999),
            domain_range=services.joins.IdRange(200000, 2199999),
            username="Administrator",
            password="x",
        )


def test_checks_raise_and_clear_the_ldap_alerts_and_refresh_reads_the_bind_file(host, fake, run_queued, admin_user):
    assert configured(host, run_queued, admin_user).status == "succeeded"
    row = LdapDirectory.objects.get(host=host)
    stdout, stderr = said("ldap_unreachable.txt")
    fake.answer("ldapsearch", stdout=stdout, stderr=stderr, returncode=255)
    fake.answer("systemctl", "is-active", "sssd", stdout=said("ldap_sssd_inactive.txt")[0], returncode=3)
    row = services.ldap_check(row=row, transport=fake.transport(read_only=True))
    assert row.reachable is False and row.sssd_ok is False and not row.healthy, row.said
    alerts_evaluate(host=host, deliver=lambda *a, **k: None)
    open_ = set(host.alerts.filter(cleared_at=None).values_list("rule", flat=True))
    assert open_ == {"directory_ldap_unreachable", "directory_sssd"}, open_
    fake.answer("ldapsearch", stdout=said("ldap_users.ldif")[0])
    answer_groups(fake)
    fake.answer("systemctl", "is-active", "sssd", stdout=said("ldap_sssd_active.txt")[0])
    fake.reset()
    assert run_queued(services.member_check_start, host=host, user=admin_user).status == "succeeded"
    assert LdapDirectory.objects.get(host=host).healthy
    alerts_evaluate(host=host, deliver=lambda *a, **k: None)
    assert not host.alerts.filter(cleared_at=None).exists()
    base = [a for a in fake.argvs if a[0] == "ldapsearch"][0]
    assert base[base.index("-y") + 1] == BIND_FILE and "-s" in base  # the check: a base search, the bind file
    fake.reset()
    op = run_queued(services.names_refresh_start, host=host, user=admin_user)
    assert op.status == "succeeded" and "users" in op.message, op.message
    listed = [c for c in fake.calls if c.argv[0] == "ldapsearch"]
    assert listed and all(c.argv[c.argv.index("-y") + 1] == BIND_FILE and c.text is None for c in listed)


def test_removal_needs_the_uri_typed_and_takes_sssd_and_its_files_away(host, fake, run_queued, admin_user):
    assert configured(host, run_queued, admin_user).status == "succeeded"
    with pytest.raises(ValidationError):
        services.ldap_remove_start(host=host, user=admin_user, confirm="ldap://other")
    op = run_queued(services.ldap_remove_start, host=host, user=admin_user, confirm=LDAP["uri"])
    assert op.status == "succeeded", op.message
    assert " sss" not in fake.files["/etc/nsswitch.conf"]
    assert not {SSSD_CONF, BIND_FILE, CA_FILE} & set(fake.files)
    assert ["systemctl", "disable", "--now", "sssd"] in fake.argvs
    assert not LdapDirectory.objects.exists() and not DirectoryName.objects.exists()


def test_the_page_shows_the_directory_and_the_api_never_echoes_the_password(
    host, fake, run_queued, admin_user, admin_client
):
    session = admin_client.session
    session["host_id"] = host.pk
    session.save()
    page = admin_client.get("/directory/")
    assert page.status_code == 200 and b"Or read an LDAP directory" in page.content
    bad = admin_client.post("/directory/ldap/", {**LDAP, "uri": "http://x", "tls": "starttls", "schema": "rfc2307"})
    assert bad.status_code == 400 and b"ldap://host or ldaps://host" in bad.content
    assert configured(host, run_queued, admin_user).status == "succeeded"
    page = admin_client.get("/directory/")
    assert page.status_code == 200 and b"ldap://10.78.0.2:1389" in page.content and b"carol" in page.content
    assert PASSWORD.encode() not in page.content
    listed = admin_client.get("/api/v1/directory-ldap/").json()
    assert listed["results"][0]["uri"] == LDAP["uri"] and PASSWORD not in json.dumps(listed)
    names = admin_client.get("/api/v1/directory-names/", {"kind": "group"}).json()
    assert {"name": "nfsstaff", "written": "@nfsstaff"}.items() <= {
        k: v for r in names["results"] for k, v in r.items() if r["name"] == "nfsstaff"
    }.items()
    started = admin_client.post(
        "/api/v1/directory-ldap/configure/", {**LDAP, "host": host.name}, content_type="application/json"
    )
    assert started.status_code == 202 and PASSWORD not in started.content.decode()
