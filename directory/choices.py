"""The directory's words: idmap backends (explained as an admin chooses one), kinds of names, and the limits its
alerts start from."""

from django.db import models


class Backend(models.TextChoices):
    RID = "rid", "rid — one domain: ids computed from each account's RID, the same on every member"
    AD = "ad", "ad — the domain holds RFC2307 uid/gid attributes (Unix tab): those ids, as NFS clients see them"
    AUTORID = "autorid", "autorid — trusted domains too: a range handed to each domain as it is met"


class LdapTls(models.TextChoices):
    STARTTLS = "starttls", "StartTLS on ldap://"
    LDAPS = "ldaps", "ldaps:// (TLS from the start)"


class LdapSchema(models.TextChoices):
    RFC2307 = "rfc2307", "rfc2307 — groups list their members by name (memberUid): OpenLDAP's nis schema"
    RFC2307BIS = "rfc2307bis", "rfc2307bis — groups list their members by DN (member): 389 DS, FreeIPA"


CLOCK_SKEW_SECONDS = 240  # Kerberos refuses at 300: warn a minute before
PASSWORD_AGE_DAYS = 30  # winbind changes the machine password every 7 days (machine password timeout)
CHECK_MINUTES = 5  # how often the join's health is asked
TRUST_WAIT_SECONDS = 180  # a new member's secure channel: winbind may take this long on a loaded host
JOIN_SECONDS = 900  # an operation's limit: net's 300 s, the trust's wait, a listing
