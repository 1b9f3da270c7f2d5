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
