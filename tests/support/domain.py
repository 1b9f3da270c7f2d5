"""A real Active Directory for the lab: the second guest provisioned as a Samba AD domain controller (its own DNS,
on the wire between the guests), the first guest resolving through it. Made once per run and saved on both guests
as the state "domain"."""

import json

from tests.support.lab import Lab, enter_both

REALM, WORKGROUP = "LAB.TARN.TEST", "LAB"
DC_NAME = "dc1"
DC_FQDN = f"{DC_NAME}.{REALM.lower()}"
MEMBER, DC_ADDR = "10.78.0.1", "10.78.0.2"
ADMIN_PASSWORD = "Lab-Admin-Passw0rd.1"
DC_MAC = "52:54:00:12:35:59"  # the second guest's own MAC on the wire (the saved state gives both the same)
# Domain users and a group the tests log in with (made on the DC with samba-tool, as an AD admin would).
USERS = {"alice": "Alice-Passw0rd.1", "bob": "Bob-Passw0rd.1"}
GROUP = "staff"  # alice is in it, bob is not


def wire_nic(lab: Lab, mac: str = "") -> str:
    links = json.loads(lab.transport().run(["ip", "-j", "link"]).stdout)
    return next(link["ifname"] for link in links if link.get("address") == (mac or lab.env["LAB_REP_MAC"]))


def provision(member: Lab, dc: Lab) -> None:
    """The DC: named dc1, addressed on the wire, `samba-tool domain provision` (internal DNS, RFC2307 attributes),
    samba-ad-dc started, two users and a group. The member: its wire address and the DC as its DNS server."""
    nic1, nic2 = wire_nic(member), wire_nic(dc)
    member.sh(f"ip link set {nic1} up && ip addr add {MEMBER}/24 dev {nic1}")
    dc.sh(
        f"ip link set {nic2} address {DC_MAC} && ip link set {nic2} up && ip addr add {DC_ADDR}/24 dev {nic2} && "
        f"hostname {DC_NAME} && echo {DC_NAME} > /etc/hostname && "
        f"printf '127.0.0.1 localhost\\n{DC_ADDR} {DC_FQDN} {DC_NAME}\\n' > /etc/hosts"
    )
    dc.sh(
        "systemctl stop smbd nmbd winbind 2>/dev/null; rm -f /etc/samba/smb.conf && "
        f"samba-tool domain provision --realm={REALM} --domain={WORKGROUP} --server-role=dc "
        f"--dns-backend=SAMBA_INTERNAL --use-rfc2307 --host-ip={DC_ADDR} --adminpass='{ADMIN_PASSWORD}' "
        f"--option='interfaces=lo {nic2}' --option='bind interfaces only=yes' >/root/provision.log 2>&1 && "
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
    member.sh(f"printf 'search {REALM.lower()}\\nnameserver {DC_ADDR}\\n' > /etc/resolv.conf")


def enter_domain(member: Lab, dc: Lab) -> None:
    enter_both(member, dc, "domain", lambda: provision(member, dc))
