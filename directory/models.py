"""A host's membership of a domain (one row while joined), or the LDAP directory it reads users and groups from
(one row while set up: a host has one directory or the other), with what its last check found; and the directory's
users and groups as winbind or LDAP listed them (a cache the pages page through; refreshed on demand and after a
join)."""

from django.db import models

from appliance.choices import AccountKind
from appliance.models import Host
from directory.choices import Backend, LdapSchema, LdapTls
from hostlib.directory import IdRange, JoinSpec
from hostlib.sssd import LdapSpec


class DomainMember(models.Model):
    host = models.OneToOneField(Host, on_delete=models.CASCADE, related_name="domain_member")
    realm = models.CharField(max_length=253, help_text="The domain's DNS name (Kerberos realm), upper case.")
    workgroup = models.CharField(max_length=15, help_text="Its NetBIOS name: LAB in LAB\\alice.")
    dc = models.CharField("DC", max_length=253, blank=True, help_text="The DC named at the join; empty: found by DNS.")
    netbios_name = models.CharField(max_length=15, help_text="This host's account in the domain (NAME$).")
    backend = models.CharField(max_length=8, choices=Backend.choices)
    default_range = models.CharField(max_length=32)
    domain_range = models.CharField(max_length=32)
    joined_at = models.DateTimeField()
    joined_by = models.CharField(max_length=150, blank=True, help_text="The domain account used to join.")
    # The last check (every few minutes, and after a join)
    checked_at = models.DateTimeField(null=True, blank=True)
    reachable = models.BooleanField(null=True, help_text="A DC answered (net ads info).")
    dc_name = models.CharField(max_length=253, blank=True, help_text="The DC that answered.")
    clock_offset = models.IntegerField(null=True, blank=True, help_text="Seconds the DC's clock is ahead of ours.")
    password_changed = models.DateTimeField(
        null=True, blank=True, help_text="When the machine account's password last changed (winbind, weekly)."
    )
    testjoin_ok = models.BooleanField(null=True, help_text="net ads testjoin: the machine account works.")
    trust_ok = models.BooleanField(null=True, help_text="wbinfo -t: winbind's secure channel to a DC.")
    winbind_ok = models.BooleanField(null=True, help_text="winbind answered at all (wbinfo -p).")
    said = models.TextField(blank=True, help_text="What the checks that failed said.")
    # The listing
    names_refreshed_at = models.DateTimeField(null=True, blank=True)
    names_seconds = models.FloatField(null=True, blank=True)
    names_left_out = models.IntegerField(default=0, help_text="Lines winbind gave that Tarn did not take.")

    class Meta:
        verbose_name = "domain membership"

    def __str__(self):
        return f"{self.host} in {self.realm}"

    @property
    def healthy(self) -> bool:
        return bool(self.reachable and self.testjoin_ok and self.trust_ok and self.winbind_ok)

    @property
    def spec(self) -> JoinSpec:
        """The join's spec again, as the host layer takes it (to ask its domain)."""
        low, high = (tuple(int(x) for x in r.split("-")) for r in (self.default_range, self.domain_range))
        return JoinSpec(
            realm=self.realm,
            workgroup=self.workgroup,
            dc=self.dc,
            backend=self.backend,
            default_range=IdRange(*low),
            domain_range=IdRange(*high),
        )


class LdapDirectory(models.Model):
    """The LDAP directory a host reads its users and groups from (through sssd). The bind password is on the host
    only (sssd.conf and a file beside it, both root's, 0600): Tarn keeps no copy."""

    host = models.OneToOneField(Host, on_delete=models.CASCADE, related_name="ldap_directory")
    uri = models.CharField("URI", max_length=300, help_text="ldap://host (StartTLS) or ldaps://host, with a port.")
    tls = models.CharField("TLS", max_length=8, choices=LdapTls.choices, default=LdapTls.STARTTLS)
    base_dn = models.CharField("base DN", max_length=1000, help_text="Where the users and groups are searched.")
    bind_dn = models.CharField("bind DN", max_length=1000, blank=True, help_text="Empty: searched anonymously.")
    schema = models.CharField(max_length=10, choices=LdapSchema.choices, default=LdapSchema.RFC2307)
    ca_pem = models.TextField("CA certificate", help_text="The PEM the server's certificate chains to.")
    configured_at = models.DateTimeField()
    configured_by = models.CharField(max_length=150, blank=True)
    # The last check
    checked_at = models.DateTimeField(null=True, blank=True)
    reachable = models.BooleanField(null=True, help_text="The server answered a bind and a search over TLS.")
    sssd_ok = models.BooleanField(null=True, help_text="sssd runs and answers for a user of the directory.")
    said = models.TextField(blank=True, help_text="What the checks that failed said.")
    # The listing
    names_refreshed_at = models.DateTimeField(null=True, blank=True)
    names_seconds = models.FloatField(null=True, blank=True)
    names_left_out = models.IntegerField(default=0, help_text="Entries Tarn did not take (names it would not write).")

    class Meta:
        verbose_name = "LDAP directory"
        verbose_name_plural = "LDAP directories"

    def __str__(self):
        return f"{self.host} reading {self.uri}"

    @property
    def healthy(self) -> bool:
        return bool(self.reachable and self.sssd_ok)

    @property
    def spec(self) -> LdapSpec:
        """As the host layer takes it (to search it, to check it)."""
        return LdapSpec(
            uri=self.uri,
            base_dn=self.base_dn,
            ca_pem=self.ca_pem,
            bind_dn=self.bind_dn,
            tls=self.tls,
            schema=self.schema,
        )


class DirectoryName(models.Model):
    """One user or group of the joined domain or the LDAP directory (as winbind or LDAP names it)."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="directory_names")
    kind = models.CharField(max_length=5, choices=AccountKind.choices)
    name = models.CharField(max_length=64, help_text="As winbind gives it (lower case).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "kind", "name"], name="directory_name_once")]
        ordering = ["name"]

    def __str__(self):
        return self.name
