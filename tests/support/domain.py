"""A real Active Directory for the lab: the second guest provisioned as a Samba AD domain controller (its own DNS,
on the wire between the guests), the first guest resolving through it. Made once per run and saved on the second
guest as its state "dc"."""

import json
from concurrent.futures import ThreadPoolExecutor

from tests.support.lab import Lab

REALM, WORKGROUP = "LAB.TARN.TEST", "LAB"
DC_NAME = "dc1"
DC_FQDN = f"{DC_NAME}.{REALM.lower()}"
MEMBER, DC_ADDR = "10.78.0.1", "10.78.0.2"
ADMIN_PASSWORD = "Lab-Admin-Passw0rd.1"
DC_MAC = "52:54:00:12:35:59"  # the second guest's own MAC on the wire (the saved state gives both the same)
DC_STATE = "dc"  # the second guest's saved state as the DC
# Domain users and a group the tests log in with (made on the DC with samba-tool, as an AD admin would).
USERS = {"alice": "Alice-Passw0rd.1", "bob": "Bob-Passw0rd.1"}
GROUP = "staff"  # alice is in it, bob is not

# An OpenLDAP server on the same guest (slapd on its own port beside the DC's LDAP), TLS required, its certificate
# signed by a CA made there; posix users and a group for sssd, a read-only bind account for Tarn.
LDAP_PORT = 1389
LDAP_URI = f"ldap://{DC_ADDR}:{LDAP_PORT}"
LDAP_BASE = "dc=ldap,dc=tarn,dc=test"
LDAP_ADMIN_PASSWORD = "Ldap-Admin-Passw0rd.1"
LDAP_BIND_DN, LDAP_BIND_PASSWORD = f"cn=nas,{LDAP_BASE}", "Nas-Bind-Passw0rd.1"
LDAP_CA = "/etc/ldap/tls/ca.pem"
LDAP_USERS = {"carol": 5001, "dave": 5002}
LDAP_GROUP, LDAP_GID = "nfsstaff", 5100  # carol is in it
LDAP_HOSTILE = "o'brien"  # a posix user whose name Tarn will not write into a file: left out and counted


def wire_nic(lab: Lab, mac: str = "") -> str:
    links = json.loads(lab.sh("ip -j link"))
    return next(link["ifname"] for link in links if link.get("address") == (mac or lab.env["LAB_REP_MAC"]))


def provision_dc(dc: Lab) -> None:
    """The DC: named dc1, addressed on the wire, `samba-tool domain provision` (internal DNS, RFC2307 attributes),
    samba-ad-dc started, two users and a group. Built from the clean state and saved as "dc" (tests/support/
    lab_fixtures.py starts it in the background when a test of the session asks for `domain`)."""
    nic = wire_nic(dc)
    dc.sh(
        f"ip link set {nic} address {DC_MAC} && ip link set {nic} up && ip addr add {DC_ADDR}/24 dev {nic} && "
        f"hostname {DC_NAME} && echo {DC_NAME} > /etc/hostname && "
        f"printf '127.0.0.1 localhost\\n{DC_ADDR} {DC_FQDN} {DC_NAME}\\n' > /etc/hosts"
    )
    dc.sh(
        "systemctl stop smbd nmbd winbind 2>/dev/null; rm -f /etc/samba/smb.conf && "
        f"samba-tool domain provision --realm={REALM} --domain={WORKGROUP} --server-role=dc "
        f"--dns-backend=SAMBA_INTERNAL --use-rfc2307 --host-ip={DC_ADDR} --adminpass='{ADMIN_PASSWORD}' "
        f"--option='interfaces=lo {nic}' --option='bind interfaces only=yes' >/root/provision.log 2>&1 && "
        "cp /var/lib/samba/private/krb5.conf /etc/krb5.conf && "
        "systemctl unmask samba-ad-dc && systemctl start samba-ad-dc",
        timeout=900,
    )
    # The DC's DNS answers once samba has started its services (a while under emulation).
    dc.sh(
        f"for i in $(seq 120); do host -t SRV _ldap._tcp.{REALM.lower()} 127.0.0.1 >/dev/null 2>&1 && exit 0; "
        "sleep 1; done; exit 1",
        timeout=180,
    )
    # The DC's own DNS names and service principals (ldap/, GC/, …), which samba registers by itself only some minutes
    # after it starts: without ldap/ a member's Kerberos bind to LDAP fails, and leaving only disables its account.
    # Asked again until ldap/ is there: once a member's join failed with "failed to connect to AD: Operations error"
    # right after a provisioning (the bind that needs it).
    dc.sh(
        "for i in $(seq 30); do samba_dnsupdate >/dev/null 2>&1; samba_spnupdate >/dev/null 2>&1; "
        f"samba-tool spn list '{DC_NAME.upper()}$' 2>/dev/null | grep -qi 'ldap/{DC_FQDN}' && exit 0; sleep 5; done; exit 1",
        timeout=600,
    )
    for name, password in USERS.items():
        dc.sh(f"samba-tool user add {name} '{password}'", timeout=120)
    dc.sh(f"samba-tool group add {GROUP} && samba-tool group addmembers {GROUP} alice", timeout=120)
    provision_ldap(dc)


def ldap_user(name: str, uid: int) -> str:
    return (
        f"dn: uid={name},ou=people,{LDAP_BASE}\nobjectClass: inetOrgPerson\nobjectClass: posixAccount\n"
        f"uid: {name}\ncn: {name}\nsn: Lab\nuidNumber: {uid}\ngidNumber: {LDAP_GID}\nhomeDirectory: /home/{name}\n\n"
    )


def provision_ldap(dc: Lab) -> None:
    """slapd (Debian's, unconfigured in the image) for ldap.tarn.test on port 1389, with a certificate for the wire
    address; plain LDAP refused (olcSecurity ssf=1: over TCP only TLS makes the grade, the local socket does), and its
    people, a group and the bind account."""
    dc.sh(
        "mkdir -p /etc/ldap/tls && cd /etc/ldap/tls && "
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 30 "
        "-subj '/CN=Tarn lab LDAP CA' 2>/dev/null && "
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr "
        f"-subj '/CN={DC_ADDR}' 2>/dev/null && printf 'subjectAltName=IP:{DC_ADDR}\\n' > san.ext && "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 30 "
        "-extfile san.ext 2>/dev/null && chgrp openldap server.key && chmod 0640 server.key"
    )
    preseed = "\\n".join(
        [
            "slapd slapd/no_configuration boolean false",
            "slapd slapd/domain string ldap.tarn.test",
            "slapd shared/organization string Tarn lab",
            f"slapd slapd/password1 password {LDAP_ADMIN_PASSWORD}",
            f"slapd slapd/password2 password {LDAP_ADMIN_PASSWORD}",
            "slapd slapd/purge_database boolean true",
            "slapd slapd/move_old_database boolean true",
        ]
    )
    dc.sh(
        f"printf '{preseed}\\n' | debconf-set-selections && "
        "DEBIAN_FRONTEND=noninteractive dpkg-reconfigure slapd >/root/slapd.log 2>&1 && "
        "sed -i 's|^SLAPD_SERVICES=.*|SLAPD_SERVICES=\"ldap://:1389/ ldapi:///\"|' /etc/default/slapd && "
        "systemctl restart slapd",
        timeout=300,
    )
    tls = (
        "dn: cn=config\nchangetype: modify\nreplace: olcTLSCACertificateFile\n"
        "olcTLSCACertificateFile: /etc/ldap/tls/ca.pem\n-\nreplace: olcTLSCertificateFile\n"
        "olcTLSCertificateFile: /etc/ldap/tls/server.pem\n-\nreplace: olcTLSCertificateKeyFile\n"
        "olcTLSCertificateKeyFile: /etc/ldap/tls/server.key\n-\nreplace: olcSecurity\nolcSecurity: ssf=1\n"
    )
    hashed = f"$(slappasswd -s '{LDAP_BIND_PASSWORD}')"  # run in the guest
    data = (
        f"dn: ou=people,{LDAP_BASE}\nobjectClass: organizationalUnit\nou: people\n\n"
        f"dn: ou=groups,{LDAP_BASE}\nobjectClass: organizationalUnit\nou: groups\n\n"
        + "".join(ldap_user(name, uid) for name, uid in LDAP_USERS.items())
        + ldap_user(LDAP_HOSTILE, 5009)
        + f"dn: cn={LDAP_GROUP},ou=groups,{LDAP_BASE}\nobjectClass: posixGroup\ncn: {LDAP_GROUP}\n"
        f"gidNumber: {LDAP_GID}\nmemberUid: carol\n\n"
        f"dn: {LDAP_BIND_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: nas\n"
        f"userPassword: {hashed}\n"
    )
    dc.sh(
        f"printf '{tls}' | ldapmodify -Q -Y EXTERNAL -H ldapi:/// >/dev/null && "
        f"printf \"{data}\" | ldapadd -x -H ldapi:/// -D cn=admin,{LDAP_BASE} -w '{LDAP_ADMIN_PASSWORD}' >/dev/null",
        timeout=120,
    )


def member_on_wire(member: Lab) -> None:
    """The member: its wire address and the DC as its DNS server (a few seconds: not worth a saved state)."""
    nic = wire_nic(member)
    member.sh(
        f"ip link set {nic} up && ip addr add {MEMBER}/24 dev {nic} && "
        f"printf 'search {REALM.lower()}\\nnameserver {DC_ADDR}\\n' > /etc/resolv.conf"
    )
    member.touched()


def enter_domain(member: Lab, dc: Lab) -> None:
    """The DC restored (or made once and saved; already there when provisioned in the background), the member from
    its clean state put on the wire."""
    with ThreadPoolExecutor(2) as both:  # side by side: each guest its own run dir, monitor and connection
        made = [both.submit(dc.enter, DC_STATE, lambda: provision_dc(dc)), both.submit(member.enter, "clean")]
        for done in made:
            done.result()
    member_on_wire(member)
