"""Joining a domain: every value an admin gives is checked before a file is rendered or an argv built, each error
naming its field."""

import pytest

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
    assert "   security = ads\n   realm = LAB.TARN.TEST\n   workgroup = LAB\n   netbios name = NAS1\n" in text
    assert "idmap config * : backend = tdb\n   idmap config * : range = 100000-199999\n" in text
    assert "idmap config LAB : backend = rid\n   idmap config LAB : range = 200000-2199999\n" in text
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
