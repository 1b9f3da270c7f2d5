"""Create the first admin if there is none: password from TARN_ADMIN_PASSWORD, else generated and printed once."""

import secrets

from django.core.management.base import BaseCommand

from appliance.choices import Role
from appliance.env import env_str
from appliance.models import User


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args, **options):
        if User.objects.filter(role=Role.ADMIN).exists() or User.objects.filter(is_superuser=True).exists():
            return
        password = env_str("TARN_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        User.objects.create_user("admin", password=password, role=Role.ADMIN)
        if env_str("TARN_ADMIN_PASSWORD"):
            self.stdout.write("Created user 'admin' with the password from TARN_ADMIN_PASSWORD.")
        else:
            self.stdout.write(
                f"Created user 'admin' with password: {password}\n(shown once; change it after logging in)"
            )
