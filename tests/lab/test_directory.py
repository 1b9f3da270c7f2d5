"""Joining a real Active Directory: the second guest is a Samba AD DC (tests/support/domain.py), the first joins it
through hostlib's verbs over Tarn's own SSH. What the domain says is read back with Samba's own tools."""

import pytest

from hostlib import directory
from hostlib.directory import JoinSpec
from tests.support.domain import ADMIN_PASSWORD, DC_FQDN, GROUP, REALM, USERS, WORKGROUP, enter_domain

pytestmark = pytest.mark.lab
SPEC = JoinSpec(realm=REALM.lower(), workgroup=WORKGROUP, dc=DC_FQDN)


@pytest.fixture
def domain(guest, guest2):
    enter_domain(guest, guest2)
    return guest2


def test_a_member_joins_sees_the_domains_users_and_groups_maps_them_by_rid_and_leaves(guest, domain):
    t = guest.transport()
    ids, highest = directory.host_ids(t)
    spec = directory.check_join(SPEC, local_ids=ids, local_max=highest)
    info = directory.ads_info(t, spec)
    assert info.realm == REALM and DC_FQDN in info.ldap_server_name.lower() and abs(info.offset) < 60, info

    # A wrong password: refused with the domain's words, and the files put back as they were.
    before = directory.member_prepare(t, spec, "labnas")
    with pytest.raises(directory.DirectoryError) as caught:
        directory.join(t, spec, "Administrator", "not the password")
    assert "refused the join" in str(caught.value)
    directory.member_restore(t, before)
    assert "include = /etc/samba/tarn/directory.conf" not in guest.sh("cat /etc/samba/smb.conf")

    directory.member_prepare(t, spec, "labnas")
    said = directory.join(t, spec, "Administrator", ADMIN_PASSWORD)
    assert "Joined" in said, said
    assert ADMIN_PASSWORD not in guest.sh("ps -eo args; cat /etc/samba/tarn/directory.conf /etc/krb5.conf")
    directory.winbind_on(t)
    assert directory.testjoin(t)[0]
    guest.sh("for i in $(seq 180); do wbinfo -t >/dev/null 2>&1 && exit 0; sleep 1; done; exit 1", timeout=200)
    assert directory.trust_ok(t)[0]
    users, _ = directory.domain_names(t, WORKGROUP)
    groups, _ = directory.domain_names(t, WORKGROUP, groups=True)
    assert {"administrator", *USERS} <= set(users) and {GROUP, "domain users"} <= set(groups)
    # The rid backend: a domain user's uid is the domain range's start plus its RID, the same on every member.
    sid = guest.sh(f"wbinfo -n '{WORKGROUP}\\alice'").split()[0]
    alice = guest.sh(f"getent passwd '{WORKGROUP}\\alice'").split(":")
    assert int(alice[2]) == spec.domain_range.low + int(sid.rsplit("-", 1)[1]), (sid, alice)

    # Leaving deletes the machine account on the DC.
    assert "LABNAS$" in domain.sh("samba-tool computer list")
    directory.leave(t, "Administrator", ADMIN_PASSWORD)
    directory.winbind_off(t)
    assert "LABNAS$" not in domain.sh("samba-tool computer list")
    assert "winbind" not in guest.sh("grep -E '^(passwd|group):' /etc/nsswitch.conf")
    assert not directory.testjoin(t)[0]
