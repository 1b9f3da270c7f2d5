"""API authentication with per-user bearer tokens (`Authorization: Bearer tarn_…`)."""

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from appliance.models import ApiToken


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode(errors="replace").split()
        if not header or header[0] != self.keyword:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header.")
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=ApiToken.hash(header[1]), revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request):
        return self.keyword


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Describe bearer tokens in the OpenAPI schema."""

    target_class = "appliance.auth.tokens.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A Tarn API token (Account → API tokens)."}
