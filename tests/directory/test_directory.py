"""The directory app over a FakeHost that answers net, wbinfo and getent with what Samba printed in the lab
(tests/fixtures/host/directory, captured against the lab's AD DC): the join, its refusals and the files put back,
leaving, the checks and their alerts, the names' copy, the page and the API. The lab proves the effects
(tests/lab/test_directory.py)."""

import json
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

import shares.services as shares_services
from analytics.services import alerts_evaluate
from appliance.models import Host, Operation, OperationSecret
from appliance.operations import TargetBusy
from directory import services
from directory.models import DirectoryName, DomainMember
from hostlib import samba
from hostlib.directory import DIRECTORY_CONF, DIRECTORY_INCLUDE, IdRange
from hostlib.errors import CommandTimeout
from shares.models import ShareSettings, SmbShare
from shares.services import shares_render, smb_share_save_start
from tests.support.runners import FIXTURES, FakeHost

CAPTURED = FIXTURES / "directory"
PASSWORD = "Join-Pass'word;$(x)"
JOIN = {
    "realm": "lab.tarn.test",
    "workgroup": "lab",
    "dc": "dc1.lab.tarn.test",
    "backend": "rid",
    "default_range": IdRange(100000, 199999),
    "domain_range": IdRange(200000, 2199999),
    "username": "Administrator",
    "password": PASSWORD,
}


def out(name: str) -> str:
    return (CAPTURED / name).read_text()


def said(name: str) -> tuple[str, str]:
    """A capture with its stderr after a `--- stderr ---` line (as capture_directory writes them)."""
    stdout, _, stderr = out(name).partition("\n--- stderr ---\n")
    return stdout, stderr


@pytest.fixture
def host(db):
    return Host.objects.create(name="nas1", address="10.0.0.5")


@pytest.fixture
def fake(monkeypatch):
    fake = FakeHost()
    fake.files.update(
        {
            "/etc/samba/smb.conf": out("smb.conf"),
            "/etc/nsswitch.conf": out("nsswitch.conf"),
            "/etc/login.defs": out("login.defs"),
            "/etc/hostname": "labnas\n",
        }
    )
    fake.answer("which", "net", stdout="/usr/bin/net\n/usr/bin/wbinfo\n/usr/sbin/winbindd\n")
    fake.answer("getent", "-s", "files", "passwd", stdout=out("getent_passwd.txt"))
    fake.answer("net", "ads", "info", stdout=out("net_ads_info.json"))
    fake.answer("net", "ads", "join", stdout=said("net_ads_join.txt")[0], stderr=said("net_ads_join.txt")[1])
    fake.answer("net", "ads", "leave", stdout=said("net_ads_leave.txt")[0], stderr=said("net_ads_leave.txt")[1])
    fake.answer("net", "ads", "testjoin", stdout=said("net_ads_testjoin.txt")[0])
    fake.answer("wbinfo", "-p", stdout="Ping to winbindd succeeded\n")
    fake.answer("wbinfo", "-t", stdout=said("wbinfo_t.txt")[0])
    fake.answer("wbinfo", "-u", stdout=out("wbinfo_u.txt"))
    fake.answer("wbinfo", "-g", stdout=out("wbinfo_g.txt"))
    return fake.install(monkeypatch)


def joined(host, run_queued, admin_user, **extra):
    return run_queued(services.member_join_start, host=host, user=admin_user, **{**JOIN, **extra})


def test_a_join_writes_the_member_settings_joins_with_the_password_on_stdin_and_lists_the_domain(
    host, fake, run_queued, admin_user
):
    op = joined(host, run_queued, admin_user)
    assert op.status == "succeeded", op.message
    assert "Joined LAB.TARN.TEST as LABNAS$" in op.message
    join = next(c for c in fake.calls if c.argv[:3] == ["net", "ads", "join"])
    assert join.argv == ["net", "ads", "join", "-U", "Administrator", "-S", "dc1.lab.tarn.test"]
    assert join.text == PASSWORD + "\n"  # stdin, never argv
    assert any(a[:3] == ["net", "ads", "join"] and e == {"PASSWD_FD": "0"} for a, e in fake.environments)
    assert not any(PASSWORD in " ".join(a) for a in fake.argvs)
    assert not OperationSecret.objects.exists() and PASSWORD not in json.dumps(op.params) + op.log
    conf = fake.files[DIRECTORY_CONF]
    assert "security = ads" in conf and "realm = LAB.TARN.TEST" in conf and "netbios name = LABNAS" in conf
    assert "idmap config LAB : range = 200000-2199999" in conf
    assert DIRECTORY_INCLUDE in fake.files["/etc/samba/smb.conf"]
    assert "winbind" in fake.files["/etc/nsswitch.conf"].split("passwd:")[1].splitlines()[0]
    assert "workgroup = LAB" in fake.files[samba.SMB_INCLUDE]  # smbd serves the domain's, not WORKGROUP
    member = DomainMember.objects.get(host=host)
    assert (member.realm, member.workgroup, member.netbios_name, member.joined_by) == (
        "LAB.TARN.TEST",
        "LAB",
        "LABNAS",
        "Administrator",
    )
    assert member.healthy and member.dc_name == "dc1.lab.tarn.test" and member.clock_offset == 0
    users = set(DirectoryName.objects.filter(host=host, kind="user").values_list("name", flat=True))
    groups = set(DirectoryName.objects.filter(host=host, kind="group").values_list("name", flat=True))
    assert {"alice", "bob", "administrator"} <= users and {"staff", "domain users"} <= groups
    assert ShareSettings.objects.get(host=host).domain_workgroup == "LAB"


def test_a_wrong_password_puts_every_file_back_and_keeps_no_membership(host, fake, run_queued, admin_user):
    stdout, stderr = said("net_ads_join_wrong_password.txt")
    fake.answer("net", "ads", "join", stdout=stdout, stderr=stderr, returncode=255)
    smb_conf = fake.files["/etc/samba/smb.conf"]
    op = joined(host, run_queued, admin_user)
    assert op.status == "failed" and "The domain refused the join" in op.message, op.message
    assert fake.files["/etc/samba/smb.conf"] == smb_conf
    assert "Not joined" in fake.files[DIRECTORY_CONF]
    assert not DomainMember.objects.exists() and not DirectoryName.objects.exists()
    assert not any(a[:2] == ["systemctl", "enable"] for a in fake.argvs)  # winbind never started
    assert ShareSettings.objects.filter(host=host, domain_workgroup="LAB").count() == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("realm", "lab tarn.test"),
        ("realm", "lab.tarn.test."),
        ("workgroup", "SIXTEENCHARSLONG"),
        ("dc", "dc1;reboot"),
        ("default_range", IdRange(1000, 50000)),  # local accounts' ids
        ("domain_range", IdRange(150000, 300000)),  # overlaps the default range
        ("username", "LAB\\Administrator"),
        ("username", "admin@lab"),
        ("username", 'ad"min'),
        ("password", "two\nlines"),
    ],
)
def test_bad_join_input_is_refused_on_its_field_and_nothing_starts(host, fake, admin_user, field, value):
    with pytest.raises(ValidationError) as caught:
        services.member_join_start(host=host, user=admin_user, **{**JOIN, field: value})
    assert field in caught.value.message_dict, caught.value.message_dict
    assert not Operation.objects.exists() and fake.calls == []


def test_the_host_refuses_a_range_covering_its_own_accounts_at_run_time(host, fake, run_queued, admin_user):
    fake.answer("getent", "-s", "files", "passwd", stdout="tarnuser:x:200123:200123::/home/t:/bin/sh\n")
    op = joined(host, run_queued, admin_user)
    assert op.status == "failed" and "200123" in op.message
    assert not any(a[:3] == ["net", "ads", "join"] for a in fake.argvs) and DIRECTORY_CONF not in fake.files


def test_open_smb_sessions_are_named_and_the_join_waits_for_the_admins_word(host, fake, run_queued, admin_user):
    status = {"sessions": {"1": {"username": "carol", "remote_machine": "10.0.0.9", "session_dialect": "SMB3_11"}}}
    fake.answer("smbstatus", "-j", stdout=json.dumps(status))
    op = joined(host, run_queued, admin_user)
    assert op.status == "failed" and "carol from 10.0.0.9" in op.message and "connected" in op.message
    assert DIRECTORY_CONF not in fake.files
    op = joined(host, run_queued, admin_user, sessions_ok=True)
    assert op.status == "succeeded", op.message


def test_two_joins_at_once_and_a_second_domain_are_refused(host, fake, run_queued, admin_user):
    services.member_join_start(host=host, user=admin_user, **JOIN)
    with pytest.raises(TargetBusy):
        services.member_join_start(host=host, user=admin_user, **JOIN)
    Operation.objects.all().delete()
    assert joined(host, run_queued, admin_user).status == "succeeded"
    with pytest.raises(ValidationError, match="leave it first"):
        services.member_join_start(host=host, user=admin_user, **JOIN)


def test_leaving_deletes_the_account_stops_winbind_and_gives_smb_its_workgroup_back(host, fake, run_queued, admin_user):
    joined(host, run_queued, admin_user)
    with pytest.raises(ValidationError, match="LAB.TARN.TEST"):
        services.member_leave_start(host=host, user=admin_user, username="Administrator", password="x", confirm="lab")
    fake.reset()
    op = run_queued(
        services.member_leave_start,
        host=host,
        user=admin_user,
        username="Administrator",
        password=PASSWORD,
        confirm="LAB.TARN.TEST",
    )
    assert op.status == "succeeded", op.message
    leave = next(c for c in fake.calls if c.argv[:3] == ["net", "ads", "leave"])
    assert leave.text == PASSWORD + "\n"
    assert ["systemctl", "disable", "--now", "winbind"] in fake.argvs
    assert "winbind" not in fake.files["/etc/nsswitch.conf"]
    assert "workgroup = WORKGROUP" in fake.files[samba.SMB_INCLUDE]
    assert not DomainMember.objects.exists() and not DirectoryName.objects.exists()


def test_leaving_a_dead_domain_on_this_host_only_asks_nothing_of_the_dc(host, fake, run_queued, admin_user):
    joined(host, run_queued, admin_user)
    fake.reset()
    op = run_queued(services.member_leave_start, host=host, user=admin_user, confirm="LAB.TARN.TEST", local_only=True)
    assert op.status == "succeeded" and not any(a[:3] == ["net", "ads", "leave"] for a in fake.argvs)
    assert not DomainMember.objects.exists()


def test_a_dc_gone_raises_its_alerts_and_a_check_that_finds_it_back_clears_them(host, fake, run_queued, admin_user):
    joined(host, run_queued, admin_user)
    member = DomainMember.objects.get(host=host)
    stdout, stderr = said("net_ads_testjoin_dc_down.txt")
    fake.answer("net", "ads", "info", stdout="", stderr="Didn't find the ldap server!\n", returncode=255)
    fake.answer("net", "ads", "testjoin", stdout=stdout, stderr=stderr, returncode=255)
    stdout, stderr = said("wbinfo_t_dc_down.txt")
    fake.answer("wbinfo", "-t", stdout=stdout, stderr=stderr, returncode=1)
    member = services.member_check(member=member, transport=fake.transport(read_only=True))
    assert member.reachable is False and member.testjoin_ok is False and member.trust_ok is False
    assert "No logon servers" in member.said
    alerts_evaluate(host=host)
    assert set(host.alerts.filter(cleared_at=None).values_list("rule", flat=True)) == {"directory_unreachable"}
    fake.answer("net", "ads", "info", stdout=out("net_ads_info.json"))
    fake.answer("net", "ads", "testjoin", stdout=said("net_ads_testjoin.txt")[0])
    fake.answer("wbinfo", "-t", stdout=said("wbinfo_t.txt")[0])
    services.member_check(member=member, transport=fake.transport(read_only=True))
    alerts_evaluate(host=host)
    assert not host.alerts.filter(cleared_at=None).exists()


def test_clock_skew_a_stale_machine_password_and_a_silent_winbind_are_alerted(host, fake, run_queued, admin_user):
    joined(host, run_queued, admin_user)
    info = json.loads(out("net_ads_info.json"))
    info["Server time offset"] = 360
    info["Last machine account password change"] = int((timezone.now() - timedelta(days=45)).timestamp())
    fake.answer("net", "ads", "info", stdout=json.dumps(info))
    fake.answer(
        "wbinfo", "-p", stdout="", stderr="failed to call wbcPingDc2: WBC_ERR_WINBIND_NOT_AVAILABLE\n", returncode=1
    )
    services.member_check(member=DomainMember.objects.get(host=host), transport=fake.transport(read_only=True))
    alerts_evaluate(host=host)
    open_ = {a.rule: a.message for a in host.alerts.filter(cleared_at=None)}
    assert set(open_) == {"directory_clock_skew", "directory_machine_password", "directory_winbind"}, open_
    assert "+360 s" in open_["directory_clock_skew"] and "45 days" in open_["directory_machine_password"]


def test_a_refresh_keeps_the_rows_of_names_still_there_and_drops_the_gone(host, fake, run_queued, admin_user):
    joined(host, run_queued, admin_user)
    alice = DirectoryName.objects.get(host=host, kind="user", name="alice")
    fake.answer("wbinfo", "-u", stdout='LAB\\alice\nLAB\\carol\nOTHER\\dave\nLAB\\bad"name\n')
    op = run_queued(services.names_refresh_start, host=host, user=admin_user)
    assert op.status == "succeeded", op.message
    users = DirectoryName.objects.filter(host=host, kind="user")
    assert set(users.values_list("name", flat=True)) == {"alice", "carol"}
    assert users.get(name="alice").pk == alice.pk
    assert DomainMember.objects.get(host=host).names_left_out == 2


def test_shares_take_domain_names_only_of_the_joined_domain_and_quote_a_name_with_a_space(
    host, fake, run_queued, admin_user, monkeypatch
):
    monkeypatch.setattr(shares_services, "_share_path", lambda host, dataset: "/tank/docs")
    data = {"name": "docs", "dataset": "tank/docs", "valid_users": 'LAB\\alice "@LAB\\Domain Users"'}
    with pytest.raises(ValidationError) as caught:
        smb_share_save_start(host=host, user=admin_user, data=data)
    assert "not joined to a domain" in caught.value.message_dict["valid_users"][0]
    joined(host, run_queued, admin_user)
    smb_share_save_start(host=host, user=admin_user, data=data)
    smb = shares_render(host)["smb"]
    assert 'valid users = LAB\\alice "@LAB\\Domain Users"' in smb and "workgroup = LAB" in smb
    with pytest.raises(ValidationError, match="joined to LAB"):
        smb_share_save_start(
            host=host, user=admin_user, data={**data, "valid_users": "OTHER\\eve"}, pk=SmbShare.objects.get().pk
        )
    for bad in ["LAB\\al@ice", 'LAB\\"x"', "LAB\\a\\b", "@LAB\\staff\n@root"]:
        with pytest.raises(ValidationError) as caught:
            smb_share_save_start(
                host=host, user=admin_user, data={**data, "valid_users": bad}, pk=SmbShare.objects.get().pk
            )
        assert "valid_users" in caught.value.message_dict, bad


def test_the_page_shows_the_join_and_pages_and_searches_the_names(
    host, fake, run_queued, admin_user, admin_client, viewer_client
):
    session = admin_client.session
    session["host_id"] = host.pk
    session.save()
    page = admin_client.get("/directory/")
    assert page.status_code == 200 and b'id="directory-join"' in page.content and b"is in no domain" in page.content
    joined(host, run_queued, admin_user)
    DirectoryName.objects.bulk_create([DirectoryName(host=host, kind="user", name=f"user{i:05d}") for i in range(120)])
    page = admin_client.get("/directory/?kind=user&q=user0010")
    text = page.content.decode()
    assert "LAB.TARN.TEST" in text and "LABNAS$" in text and 'data-check="trust"' in text
    assert "LAB\\user00100" in text and "LAB\\user00099" not in text and "(10)" in text
    groups = admin_client.get("/directory/?kind=group", headers={"HX-Request": "true", "HX-Target": "names"})
    assert groups.content.decode().startswith('<div id="names">') and "@LAB\\staff" in groups.content.decode()
    session = viewer_client.session
    session["host_id"] = host.pk
    session.save()
    shown = viewer_client.get("/directory/").content.decode()
    assert "Leave LAB.TARN.TEST" not in shown and "Refresh the list" not in shown


def test_the_api_joins_without_echoing_the_password_and_lists_names_as_shares_write_them(
    host, fake, run_queued, admin_user, admin_client, operator_client
):
    body = {**JOIN, "host": "nas1", "default_range": "100000-199999", "domain_range": "200000-2199999"}
    assert (
        operator_client.post("/api/v1/directory-members/join/", body, content_type="application/json").status_code
        == 403
    )
    bad = admin_client.post(
        "/api/v1/directory-members/join/", {**body, "workgroup": "x" * 16}, content_type="application/json"
    )
    assert bad.status_code == 400 and "workgroup" in bad.json()
    response = run_queued(
        admin_client.post, path="/api/v1/directory-members/join/", data=body, content_type="application/json"
    )
    assert response.status_code == 202 and PASSWORD not in response.content.decode()
    members = admin_client.get("/api/v1/directory-members/?host=nas1").json()["results"]
    assert members[0]["realm"] == "LAB.TARN.TEST" and members[0]["healthy"] is True
    names = admin_client.get("/api/v1/directory-names/?host=nas1&kind=group&q=staff").json()["results"]
    assert [n["written"] for n in names] == ["@LAB\\staff"]
    spaced = admin_client.get("/api/v1/directory-names/?host=nas1&kind=group&q=domain users").json()["results"]
    assert '"@LAB\\domain users"' in [n["written"] for n in spaced]  # quoted: valid users takes it as one name


def test_a_refused_join_on_the_page_keeps_the_form_open_with_the_error_under_its_field(host, fake, admin_client):
    session = admin_client.session
    session["host_id"] = host.pk
    session.save()
    form = {**JOIN, "workgroup": "SIXTEENCHARSLONG1", "default_range": "100000-199999", "domain_range": "1-2"}
    page = admin_client.post("/directory/join/", form)
    assert page.status_code == 400
    assert list(page.context["join_form"].errors) == ["workgroup"] and PASSWORD not in page.content.decode()
    form["workgroup"] = "LAB"
    page = admin_client.post("/directory/join/", form)
    assert page.status_code == 400 and "Starts above 60,000" in str(page.context["join_form"].errors["domain_range"])
    assert not Operation.objects.exists()


def test_a_dc_that_does_not_answer_fails_the_join_before_any_file_is_written(host, fake, run_queued, admin_user):
    stdout, stderr = said("net_ads_info_dc_down.json")
    fake.answer("net", "ads", "info", stdout=stdout, stderr=stderr, returncode=255)
    op = joined(host, run_queued, admin_user)
    assert op.status == "failed" and "No domain controller of LAB.TARN.TEST answered" in op.message, op.message
    assert "Didn't find the ldap server" in op.message
    assert not fake.writes and not DomainMember.objects.exists()


def test_a_dc_clock_six_minutes_off_is_refused_before_joining(host, fake, run_queued, admin_user):
    info = json.loads(out("net_ads_info.json"))
    info["Server time offset"] = -360
    fake.answer("net", "ads", "info", stdout=json.dumps(info))
    op = joined(host, run_queued, admin_user)
    assert op.status == "failed" and "-360 s" in op.message and "NTP" in op.message
    assert not fake.writes and not DomainMember.objects.exists()


def test_the_clock_offset_is_the_dcs_time_against_the_hosts_own_clock(host, fake, run_queued, admin_user):
    joined(host, run_queued, admin_user)
    server_time = json.loads(out("net_ads_info.json"))["Server time"]
    fake.answer("date", "+%s", stdout=f"{server_time + 360}\n")  # the host 6 minutes ahead; net itself says 0
    member = services.member_check(member=DomainMember.objects.get(host=host), transport=fake.transport(read_only=True))
    assert member.clock_offset == -360


def test_a_failure_after_net_joined_leaves_the_domain_again_and_puts_everything_back(
    host, fake, run_queued, admin_user
):
    smb_conf = fake.files["/etc/samba/smb.conf"]
    nsswitch = fake.files["/etc/nsswitch.conf"]
    fake.answer("systemctl", "enable", "--now", "winbind", returncode=1, stderr="Failed to enable unit: winbind\n")
    op = joined(host, run_queued, admin_user)
    assert op.status == "failed", op.message
    calls = [c for c in fake.calls if c.argv[:3] in (["net", "ads", "join"], ["net", "ads", "leave"])]
    assert [c.argv[2] for c in calls] == ["join", "leave"] and calls[1].text == PASSWORD + "\n"
    assert fake.files["/etc/samba/smb.conf"] == smb_conf and fake.files["/etc/nsswitch.conf"] == nsswitch
    assert "workgroup = WORKGROUP" in fake.files[samba.SMB_INCLUDE]
    assert "/etc/krb5.conf" not in fake.files  # there was none before
    assert not DomainMember.objects.exists() and ShareSettings.objects.get(host=host).domain_workgroup == ""


def test_a_host_without_winbind_is_refused_before_anything_is_written(host, fake, run_queued, admin_user):
    fake.answer("which", "net", stdout="/usr/bin/net\n", returncode=1)
    op = joined(host, run_queued, admin_user)
    assert op.status == "failed" and "lacks wbinfo, winbindd" in op.message, op.message
    assert not fake.writes


def test_the_api_takes_its_default_ranges_and_a_password_with_spaces_at_its_ends(host, fake, run_queued, admin_client):
    body = {"host": "nas1", "realm": "lab.tarn.test", "workgroup": "LAB", "username": "Administrator"}
    response = run_queued(
        admin_client.post,
        path="/api/v1/directory-members/join/",
        data={**body, "password": " spaced pass "},
        content_type="application/json",
    )
    assert response.status_code == 202, response.content
    join = next(c for c in fake.calls if c.argv[:3] == ["net", "ads", "join"])
    assert join.text == " spaced pass \n"
    assert DomainMember.objects.get(host=host).domain_range == "200000-2199999"


def test_an_unbalanced_quote_in_valid_users_is_refused(host, fake, run_queued, admin_user, monkeypatch):
    monkeypatch.setattr(shares_services, "_share_path", lambda host, dataset: "/tank/docs")
    joined(host, run_queued, admin_user)
    data = {"name": "docs", "dataset": "tank/docs", "valid_users": '"@LAB\\Domain Users'}
    with pytest.raises(ValidationError) as caught:
        smb_share_save_start(host=host, user=admin_user, data=data)
    assert "unbalanced double quote" in caught.value.message_dict["valid_users"][0]


def test_a_dc_cut_off_makes_the_checks_wait_out_their_timeouts_and_say_so(host, fake, run_queued, admin_user):
    joined(host, run_queued, admin_user)

    def hang(argv):
        raise CommandTimeout(argv, 30)

    for argv in (("net", "ads"), ("wbinfo", "-t")):
        fake.on(*argv, call=hang)
    member = services.member_check(member=DomainMember.objects.get(host=host), transport=fake.transport(read_only=True))
    assert member.reachable is False and member.testjoin_ok is False and member.trust_ok is False
    assert member.winbind_ok and "no answer within" in member.said
