from rest_framework import serializers

from certificates.choices import PEM_MAX


class CertificateSerializer(serializers.Serializer):
    """The certificate the front serves."""

    subject = serializers.CharField()
    issuer = serializers.CharField()
    names = serializers.ListField(child=serializers.CharField())
    not_before = serializers.DateTimeField()
    not_after = serializers.DateTimeField()
    fingerprint = serializers.CharField(help_text="SHA-256 of the certificate, AB:CD:…")
    self_signed = serializers.BooleanField()
    hsts = serializers.BooleanField(help_text="Browsers are told to use HTTPS only (the admin said they trust it).")


class CertificateImportRequest(serializers.Serializer):
    name = serializers.CharField(max_length=253, help_text="The host name (or address) browsers use to reach Tarn.")
    certificate = serializers.CharField(
        max_length=PEM_MAX, trim_whitespace=False, help_text="PEM: the server's certificate, then its chain."
    )
    private_key = serializers.CharField(
        max_length=PEM_MAX,
        trim_whitespace=False,
        required=False,
        allow_blank=True,
        help_text="PEM, unencrypted; empty for the certificate a CA sent back for the request made on Tarn.",
    )


class CertificateRequestRequest(serializers.Serializer):
    names = serializers.CharField(max_length=2000, help_text="Host names and addresses, separated by spaces or commas.")


class CertificateRequestSerializer(serializers.Serializer):
    csr = serializers.CharField(help_text="The pending certificate signing request (PEM); its key stays on Tarn.")


class CertificateTrustRequest(serializers.Serializer):
    trusted = serializers.BooleanField()


class AcmeRequest(serializers.Serializer):
    directory = serializers.URLField(max_length=500, help_text="The CA's ACME directory (https://).")
    names = serializers.CharField(max_length=2000, help_text="DNS names reaching this machine on port 80.")
    email = serializers.EmailField(required=False, allow_blank=True, default="")
    roots = serializers.CharField(
        max_length=PEM_MAX,
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        help_text="PEM: a private CA's certificates; empty for a public CA.",
    )
    agree = serializers.BooleanField(help_text="The CA's terms of service are agreed to.")


class AcmeSerializer(serializers.Serializer):
    directory = serializers.CharField()
    names = serializers.ListField(child=serializers.CharField())
    email = serializers.CharField()
    account = serializers.CharField(help_text="The account's URL at the directory, once made.")
    renew = serializers.BooleanField()
    renew_after = serializers.DateTimeField(allow_null=True)
    issued_at = serializers.DateTimeField(allow_null=True)
    failures = serializers.IntegerField(read_only=True, help_text="Failed tries in a row.")
    last_error = serializers.CharField()


class AcmeStopSerializer(serializers.Serializer):
    renew = serializers.BooleanField()
