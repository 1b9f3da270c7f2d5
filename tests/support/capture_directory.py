"""Capture what Samba's tools print on a domain member, for the unit tests of hostlib.directory's parsers:
`python -m tests.support.capture_directory` with both lab guests running. The second guest becomes the lab's DC
(tests/support/domain.py, the saved state "dc"); the first joins it with hostlib's verbs, and each command's
output is written to tests/fixtures/host/directory/ with its argv and exit status in MANIFEST.json. The member
leaves the domain again at the end. With `ldap`: what ldapsearch, sssctl and getent print against the same guest's
slapd (hostlib.sssd's verbs), the files ldap_*."""

import datetime
import json
import sys
import time
from pathlib import Path

from hostlib import directory, sssd
from hostlib.directory import JoinSpec
from tests.hostlib.test_sssd import CA as OTHER_CA
from tests.support import domain
from tests.support.domain import ADMIN_PASSWORD, DC_FQDN, REALM, WORKGROUP, enter_domain
from tests.support.lab import lab_up
from tests.support.lab_fixtures import SECOND

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "host" / "directory"


def main() -> None:
    member, dc = lab_up(), lab_up(overrides=SECOND)
    enter_domain(member, dc)
    t = member.transport()
    OUT.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, dict] = {}

    def save(name: str, argv: list[str], **kwargs) -> None:
        result = t.run(argv, check=False, timeout=300, **kwargs)
        (OUT / name).write_text(result.stdout + (f"\n--- stderr ---\n{result.stderr}" if result.stderr else ""))
        manifest[name] = {"argv": argv, "exit": result.returncode}

    spec = directory.check_join(JoinSpec(realm=REALM, workgroup=WORKGROUP, dc=DC_FQDN))
    save("nsswitch.conf", ["cat", "/etc/nsswitch.conf"])
    save("smb.conf", ["cat", "/etc/samba/smb.conf"])
    save("login.defs", ["grep", "-E", "^(UID|GID)_(MIN|MAX)", "/etc/login.defs"])
    save("getent_passwd.txt", ["getent", "-s", "files", "passwd"])
    save("net_ads_info_unjoined.json", ["net", "ads", "info", "--json", *directory._options(spec)])
    save("net_ads_testjoin_unjoined.txt", ["net", "ads", "testjoin"])
    directory.member_prepare(t, spec, "labnas")
    join = ["net", "ads", "join", "-U", "Administrator", "-S", DC_FQDN]
    save("net_ads_join_wrong_password.txt", join, env={"PASSWD_FD": "0"}, input="wrong\n", mutating=True)
    save("net_ads_join.txt", join, env={"PASSWD_FD": "0"}, input=ADMIN_PASSWORD + "\n", mutating=True)
    directory.winbind_on(t)
    member.sh("for i in $(seq 60); do wbinfo -t >/dev/null 2>&1 && exit 0; sleep 1; done; exit 1", timeout=90)
    save("net_ads_info.json", ["net", "ads", "info", "--json"])
    save("net_ads_testjoin.txt", ["net", "ads", "testjoin"])
    save("wbinfo_t.txt", ["wbinfo", "-t"])
    save("wbinfo_u.txt", ["wbinfo", "-u"])
    save("wbinfo_g.txt", ["wbinfo", "-g"])
    save("wbinfo_n_alice.txt", ["wbinfo", "-n", f"{WORKGROUP}\\alice"])
    dc.sh("systemctl stop samba-ad-dc")
    save("wbinfo_t_dc_down.txt", ["wbinfo", "-t"])
    save("net_ads_testjoin_dc_down.txt", ["net", "ads", "testjoin"])
    save("net_ads_info_dc_down.json", ["net", "ads", "info", "--json"])
    dc.sh("systemctl start samba-ad-dc")
    member.sh("for i in $(seq 120); do wbinfo -t >/dev/null 2>&1 && exit 0; sleep 1; done; exit 1", timeout=150)
    leave = ["net", "ads", "leave", "-U", "Administrator"]
    save("net_ads_leave.txt", leave, env={"PASSWD_FD": "0"}, input=ADMIN_PASSWORD + "\n", mutating=True)
    directory.winbind_off(t)
    versions = t.run(["smbd", "-V"], check=False).stdout.strip()
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    doc = {"captured_at": stamp, "samba": versions, "guest": "lab/build.sh; the DC: tests/support/domain.py"}
    (OUT / "MANIFEST.json").write_text(json.dumps({**doc, "files": manifest}, indent=2) + "\n")
    t.close()


def ldap() -> None:
    member, dc = lab_up(), lab_up(overrides=SECOND)
    enter_domain(member, dc)
    t = member.transport()
    manifest_file = OUT / "MANIFEST.json"
    doc = json.loads(manifest_file.read_text())
    password = domain.LDAP_BIND_PASSWORD

    def save(name: str, argv: list[str], **kwargs) -> None:
        result = t.run(argv, check=False, timeout=300, **kwargs)
        (OUT / name).write_text(result.stdout + (f"\n--- stderr ---\n{result.stderr}" if result.stderr else ""))
        doc["files"][name] = {"argv": argv, "exit": result.returncode}

    spec = sssd.LdapSpec(
        uri=domain.LDAP_URI,
        base_dn=domain.LDAP_BASE,
        ca_pem=dc.sh(f"cat {domain.LDAP_CA}"),
        bind_dn=domain.LDAP_BIND_DN,
    )
    bound = {"input": password, "env": {**sssd.TLS_ENV, "LDAPTLS_CACERT": sssd.CA_STAGE}}
    before = sssd.ldap_stage(t, spec)
    save("ldap_users.ldif", sssd.search_argv(spec, password=password), **bound)
    save("ldap_groups.ldif", sssd.search_argv(spec, groups=True, password=password), **bound)
    t.write_file(sssd.CHECK_FILE, sssd.render_sssd(spec, password), mode=0o600)
    save("ldap_config_check.txt", ["sssctl", "config-check", "-c", sssd.CHECK_FILE])
    t.remove_file(sssd.CHECK_FILE)
    sssd.ldap_apply(t, spec, before, password)
    for _ in range(30):
        if sssd.resolves(t, "carol"):
            break
        time.sleep(2)
    save("ldap_getent_carol.txt", ["getent", "-s", "sss", "passwd", "--", "carol"])
    save("ldap_sssd_active.txt", ["systemctl", "is-active", "sssd"])
    reach = [*sssd._ldapsearch(spec, None), "-s", "base", "-b", spec.base_dn, "--", "(objectClass=*)", "1.1"]
    save("ldap_reachable.txt", reach, env=sssd.TLS_ENV)
    member.sh(f"ip route add prohibit {domain.DC_ADDR}/32")
    save("ldap_unreachable.txt", reach, env=sssd.TLS_ENV)
    member.sh(f"ip route del prohibit {domain.DC_ADDR}/32")
    t.write_file(sssd.CA_STAGE, OTHER_CA)
    save("ldap_wrong_ca.txt", sssd.search_argv(spec, password=password), **bound)
    sssd.ldap_off(t)
    save("ldap_sssd_inactive.txt", ["systemctl", "is-active", "sssd"])
    versions = member.sh("dpkg-query -W sssd-ldap ldap-utils").strip()
    doc["sssd"] = versions
    manifest_file.write_text(json.dumps(doc, indent=2) + "\n")
    t.close()


if __name__ == "__main__":
    ldap() if sys.argv[1:] == ["ldap"] else main()
