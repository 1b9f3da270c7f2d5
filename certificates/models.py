"""What the front serves is in the data dir's tls/ (appliance.tls.State); the one row here is ACME's: where the
certificate comes from, and how its renewals went."""

from django.db import models


class Acme(models.Model):
    """ACME for the front's certificate (one row, pk 1, once the admin asked for one). The account's key is root's,
    in tls/; the row keeps only its URL at the directory."""

    directory = models.URLField(max_length=500, help_text="The CA's ACME directory URL.")
    email = models.EmailField(blank=True, help_text="The CA writes here about the account (expiry notices).")
    names = models.JSONField(default=list, help_text="The DNS names the certificate is for (the first is its CN).")
    roots = models.TextField(blank=True, help_text="PEM: a private CA's roots (its directory's and its chain's).")
    account = models.URLField(max_length=500, blank=True, help_text="The account's URL at directory, once made.")
    account_directory = models.URLField(max_length=500, blank=True)
    renew = models.BooleanField(default=True, help_text="Renewed at 2/3 of its lifetime while it is served.")
    fingerprint = models.CharField(max_length=95, blank=True, help_text="SHA-256 of the certificate ACME last gave.")
    renew_after = models.DateTimeField(null=True, blank=True)
    issued_at = models.DateTimeField(null=True, blank=True)
    tried_at = models.DateTimeField(null=True, blank=True)
    failures = models.PositiveIntegerField(default=0, help_text="Failed tries in a row.")
    last_error = models.CharField(max_length=1000, blank=True)

    def __str__(self) -> str:
        return f"ACME {', '.join(self.names)} from {self.directory}"
