"""Joining a domain: every value an admin gives is checked before a file is rendered or an argv built, each error
naming its field."""

import json
import time

import pytest

from hostlib import directory
from hostlib.configfiles import InvalidShare
from hostlib.directory import (
    IdRange,
    JoinSpec,
    check_join,
    local_ids,
    local_max,
    render_krb5,
    render_member,
    with_winbind,
)
from tests.support.runners import FakeHost, FakeTransport, captured

SPEC = JoinSpec(realm="LAB.TARN.TEST", workgroup="LAB", dc="dc1.lab.tarn.test")
PASSWORD = "Lab-Admin-Passw0rd.1"


def _problems(**changes) -> dict[str, str]:
    spec = JoinSpec(realm="ad.example.com", workgroup="example")
    for key, value in changes.pop("spec", {}).items():
        setattr(spec, key, value)
    with pytest.raises(InvalidShare) as caught:
        check_join(spec, **changes)
    return caught.value.problems


def test_a_good_spec_is_normalised():
    spec = check_join(JoinSpec(realm=" ad.Example.com ", workgroup="example", dc="DC1.ad.example.com"))
    assert (spec.realm, spec.workgroup, spec.dc) == ("AD.EXAMPLE.COM", "EXAMPLE", "dc1.ad.example.com")
    assert check_join(JoinSpec(realm="AD.EXAMPLE.COM", workgroup="EXAMPLE", dc="10.78.0.2")).dc == "10.78.0.2"


@pytest.mark.parametrize(
    "field, value, said",
    [
        ("realm", "AD EXAMPLE.COM", "two or more labels"),
        ("realm", "AD.EXAMPLE.COM.", "trailing dot"),
        ("realm", "EXAMPLE", "two or more labels"),
        ("realm", "AD.-EXAMPLE.COM", "two or more labels"),
        ("realm", "AD.EXAMPLE.COM\n[global]", "two or more labels"),
        ("realm", "ＡＤ.EXAMPLE.COM", "two or more labels"),  # fullwidth letters
        ("workgroup", "ABCDEFGHIJKLMNOP", "1-15"),
        ("workgroup", "EX AMPLE", "1-15"),
        ("workgroup", "EXAMPLE;", "1-15"),
        ("dc", "dc1 -S evil", "host name or IPv4"),
        ("dc", "-dc1", "host name or IPv4"),
        ("dc", "dc1.example.com%", "host name or IPv4"),
        ("backend", "nss", "One of rid, ad, autorid"),
    ],
)
def test_a_bad_value_names_its_field(field, value, said):
    problems = _problems(spec={field: value})
    assert said in problems[field], problems


def test_ranges_stay_clear_of_local_ids_and_of_each_other():
    # Debian's useradd hands out 1000-60000: the Samba wiki's 10000-999999 would clash with a future local account.
    assert "above 60,000" in _problems(spec={"domain_range": IdRange(10000, 999999)})["domain_range"]
    assert "above 60,000" in _problems(spec={"default_range": IdRange(3000, 7999)})["default_range"]
    # A local account or group that already has an id in the range (made by hand above UID_MAX).
    assert "already have (150000)" in _problems(local_ids={1000, 150000})["default_range"]
    assert "Overlaps the default range" in _problems(spec={"domain_range": IdRange(150000, 300000)})["domain_range"]
    assert "low below high" in _problems(spec={"domain_range": IdRange(300000, 200000)})["domain_range"]
    assert "at most" in _problems(spec={"domain_range": IdRange(300000, 2**32)})["domain_range"]
    # autorid: one range, split per domain, room for at least two slices.
    wide = IdRange(200000, 20199999)
    assert check_join(JoinSpec(realm="ad.example.com", workgroup="ex", backend="autorid", default_range=wide))
    assert "two range sizes" in _problems(spec={"backend": "autorid", "autorid_rangesize": 60000})["default_range"]
    assert "2,000 to" in _problems(spec={"backend": "autorid", "autorid_rangesize": 5})["autorid_rangesize"]
    # A host whose login.defs allows more local ids moves the floor.
    assert "above 70,000" in _problems(local_max=70000, spec={"default_range": IdRange(65000, 99999)})["default_range"]


def test_the_member_file_says_ads_and_the_idmap_of_the_chosen_backend():
    spec = JoinSpec(realm="lab.tarn.test", workgroup="lab")
    text = render_member(spec, "nas1")
    assert (
        "   server role = member server\n   security = ads\n   realm = LAB.TARN.TEST\n   workgroup = LAB\n   netbios name = NAS1\n"
        in text
    )
    assert "idmap config * : backend = tdb\n   idmap config * : range = 100000-199999\n" in text
    assert "idmap config LAB : backend = rid\n   idmap config LAB : range = 200000-2199999\n" in text
    assert "   winbind request timeout = 300\n" in text, "a big domain's first listing outlasts the default 60 s"
    ad = render_member(JoinSpec(realm="lab.tarn.test", workgroup="lab", backend="ad"), "nas1")
    assert "idmap config LAB : backend = ad\n" in ad and "schema_mode = rfc2307" in ad
    wide = IdRange(200000, 20199999)
    autorid = render_member(
        JoinSpec(realm="lab.tarn.test", workgroup="lab", backend="autorid", default_range=wide), "n"
    )
    assert "idmap config * : backend = autorid\n   idmap config * : range = 200000-20199999\n" in autorid
    assert "idmap config LAB" not in autorid and "rangesize = 100000" in autorid
    with pytest.raises(InvalidShare) as caught:
        render_member(spec, "a-name-longer-than-15")
    assert "netbios_name" in caught.value.problems
    assert "default_realm = LAB.TARN.TEST" in render_krb5(spec) and "dns_lookup_kdc = true" in render_krb5(spec)


def test_winbind_joins_the_passwd_and_group_lines_once():
    debian = "passwd:         files systemd\ngroup:          files systemd\nshadow:         files systemd\nhosts: files dns\n"
    once = with_winbind(debian)
    assert "passwd:         files systemd winbind\ngroup:          files systemd winbind\n" in once
    assert "shadow:         files systemd\nhosts: files dns\n" in once
    assert with_winbind(once) == once


def test_local_ids_and_the_highest_id_useradd_hands_out():
    passwd = "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\nweird:x:150000:10::/:/bin/sh\n"
    group = "root:x:0:\nstaff:x:50:\nbig:x:250000:\nbroken line\n"
    assert local_ids(passwd, group) == {0, 1000, 150000, 50, 250000}
    assert local_max("UID_MIN 1000\nUID_MAX\t\t\t60000\nGID_MAX 65000\n") == 65000
    assert local_max("# nothing set\n") == 60000


# --- against what Samba 4.17 printed on the lab's member (tests/support/capture_directory.py) ---------------------
MANIFEST = json.loads(captured("directory/MANIFEST.json"))["files"]


def _answer(fake: FakeHost, name: str, *prefix: str) -> FakeHost:
    """The captured command's stdout, stderr and exit status as the fake's answer to commands starting with prefix."""
    stdout, _, stderr = captured(f"directory/{name}").partition("\n--- stderr ---\n")
    return fake.answer(*prefix, stdout=stdout, stderr=stderr, returncode=MANIFEST[name]["exit"])


def _transport(fake: FakeHost) -> FakeTransport:
    return FakeTransport(fake=fake)


def test_the_dc_that_answers_its_clock_and_the_machine_passwords_age_are_read():
    t = _transport(_answer(FakeHost(), "net_ads_info.json", "net", "ads", "info"))
    info = directory.ads_info(t, SPEC)
    assert (info.realm, info.ldap_server_name, info.ldap_server) == ("LAB.TARN.TEST", "dc1.lab.tarn.test", "10.78.0.2")
    assert info.offset == 0 and info.password_changed > 1.7e9 and info.server_time >= info.password_changed
    argv = t.fake.calls[-2].argv  # then date +%s: the host's own clock
    assert argv[:4] == ["net", "ads", "info", "--json"] and "--option=realm=LAB.TARN.TEST" in argv
    assert argv[-2:] == ["-S", "dc1.lab.tarn.test"]
    down = _transport(_answer(FakeHost(), "net_ads_info_dc_down.json", "net", "ads", "info"))
    with pytest.raises(directory.DirectoryError, match="No domain controller of LAB.TARN.TEST answered: Didn't find"):
        directory.ads_info(down, SPEC)
    assert directory.parse_ads_info('{"Server time offset": "400", "Realm": "A\\u202eB"}').offset == 0
    assert directory.parse_ads_info('{"Server time offset": -400, "Realm": "A\\u202eB"}').realm == "AB"


def test_the_join_gives_the_password_on_stdin_only_and_says_what_the_domain_said():
    fake = _answer(FakeHost(), "net_ads_join.txt", "net", "ads", "join")
    assert (
        directory.join(_transport(fake), SPEC, "Administrator", PASSWORD)
        == "Joined 'LABNAS' to dns domain 'lab.tarn.test'"
    )
    call = fake.calls[-1]
    assert PASSWORD not in " ".join(call.argv) and call.text == PASSWORD + "\n" and call.mutating
    assert fake.environments == [(call.argv, {"PASSWD_FD": "0"})]
    wrong = _answer(FakeHost(), "net_ads_join_wrong_password.txt", "net", "ads", "join")
    with pytest.raises(directory.DirectoryError) as caught:
        directory.join(_transport(wrong), SPEC, "Administrator", "wrong")
    assert "refused the join: Failed to join domain: failed to lookup DC info" in str(caught.value)
    assert "The attempted logon is invalid" in str(caught.value) and "file descriptor" not in str(caught.value)
    for user, password in (("Admin istrator", PASSWORD), ("a\\b", PASSWORD), ("x", "p" * 128), ("x", "two\nlines")):
        with pytest.raises(InvalidShare):
            directory.join(_transport(FakeHost()), SPEC, user, password)
    left = _answer(FakeHost(), "net_ads_leave.txt", "net", "ads", "leave")
    assert (
        directory.leave(_transport(left), "Administrator", PASSWORD)
        == "Deleted account for 'LABNAS' in realm 'LAB.TARN.TEST'"
    )


def test_the_joins_health_reads_ok_and_says_why_not():
    ok = _answer(_answer(FakeHost(), "net_ads_testjoin.txt", "net", "ads"), "wbinfo_t.txt", "wbinfo", "-t")
    assert directory.testjoin(_transport(ok)) == (True, "Join is OK")
    assert directory.trust_ok(_transport(ok)) == (
        True,
        "checking the trust secret for domain LAB via RPC calls succeeded",
    )
    down = _answer(_answer(FakeHost(), "net_ads_testjoin_dc_down.txt", "net", "ads"), "wbinfo_t_dc_down.txt", "wbinfo")
    healthy, said = directory.testjoin(_transport(down))
    assert not healthy and said.startswith("Join to domain is not valid: No logon servers")
    healthy, said = directory.trust_ok(_transport(down))
    assert not healthy and "NT_STATUS_DOMAIN_CONTROLLER_NOT_FOUND" in said
    unjoined = _answer(FakeHost(), "net_ads_testjoin_unjoined.txt", "net", "ads")
    assert directory.testjoin(_transport(unjoined)) == (False, "Join to domain is not valid: NT code 0xfffffff6")


def test_the_domains_users_and_groups_and_what_is_left_out():
    users, left_out = directory.parse_names(captured("directory/wbinfo_u.txt"), "LAB")
    assert users == ["administrator", "alice", "bob", "guest", "krbtgt"] and left_out == 0
    groups, _ = directory.parse_names(captured("directory/wbinfo_g.txt"), "lab")
    assert {"staff", "domain users", "domain admins"} <= set(groups)
    hostile = 'LAB\\alice\nOTHER\\eve\nLAB\\x"y\nLAB\\a;b\nLAB\\\u202eevil\nLAB\\back\\slash\nno separator\n'
    assert directory.parse_names(hostile, "LAB") == (["alice"], 6)


def test_local_ids_from_the_guest_and_its_smb_conf_take_the_include_in_global():
    ids = directory.local_ids(captured("directory/getent_passwd.txt"), "")
    assert 0 in ids and 65534 in ids and max(ids) == 65534
    assert directory.local_max(captured("directory/login.defs")) == 60000
    # nobody's 65534 is above login.defs' 60000: a range starting at 60001 would cover it.
    with pytest.raises(InvalidShare) as caught:
        directory.check_join(JoinSpec(realm="a.b", workgroup="w", default_range=IdRange(60001, 70000)), local_ids=ids)
    assert "65534" in caught.value.problems["default_range"]
    smb_conf = captured("directory/smb.conf")
    out = directory.with_include(smb_conf)
    at = out.index(directory.DIRECTORY_INCLUDE)
    assert "\n[homes]\n" in out[at:] and "\n[homes]\n" not in out[:at] and "\n[global]\n" in out[:at]
    assert directory.with_include(out) == out
    assert directory.with_winbind(captured("directory/nsswitch.conf")).count("winbind") == 2


def test_users_and_groups_are_listed_side_by_side():
    """wbinfo -u and -g start together (each ~0.3 s of SSH over the emulated lab beside the listing itself)."""
    started, ends = [], {}
    fake = FakeHost()
    fake.on("wbinfo", call=lambda argv: (started.append(time.monotonic()), time.sleep(0.3)))
    fake.answer("wbinfo", "-u", stdout="LAB\\alice\nLAB\\bob\n")
    fake.answer("wbinfo", "-g", stdout="LAB\\staff\n")
    began = time.monotonic()
    users, groups, left = directory.domain_accounts(fake.transport(), "LAB")
    ends["all"] = time.monotonic() - began
    assert (users, groups, left) == (["alice", "bob"], ["staff"], 0)
    assert len(started) == 2 and abs(started[0] - started[1]) < 0.2 and ends["all"] < 0.55, (started, ends)


def test_an_empty_listing_is_refused_not_stored():
    """winbind, stuck after a listing past its request timeout, answered an empty list (the lab, 10,000 users): a
    domain always has users and groups, so Tarn says so and keeps its list."""
    fake = FakeHost()
    fake.answer("wbinfo", "-u", stdout="")
    fake.answer("wbinfo", "-g", stdout="LAB\\domain users\n")
    with pytest.raises(directory.DirectoryError, match="listed no users at all"):
        directory.domain_accounts(fake.transport(), "LAB")
