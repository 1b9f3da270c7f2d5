"""Make this machine's HTTPS certificate if there is none, and write the HTTPS front's nginx configuration once
nginx accepted it (reloading a running front). Prints the certificate's SHA-256 fingerprint: run as root by
make run, before the web starts unprivileged."""

from django.core.management.base import BaseCommand

from appliance import tls


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("--user", default="", help="the front's workers' user (the web's), when run as root")

    def handle(self, *args, user="", **options):
        info, made = tls.ensure_certificate()
        tls.front_install(user=user)
        said = "Made a self-signed certificate" if made else "The certificate in use"
        self.stdout.write(f"{said} for {', '.join(info.names)}, valid until {info.not_after:%Y-%m-%d}")
        self.stdout.write(f"SHA-256 fingerprint: {info.fingerprint}")
