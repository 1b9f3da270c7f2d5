"""Print the Celery queues a worker kind consumes: default, hosts (host.<name>…) or bench (bench.<name>…)."""

from django.core.management.base import BaseCommand

from appliance.models import Host


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=["default", "hosts", "bench"])

    def handle(self, *args, kind, **options):
        if kind == "default":
            self.stdout.write("default")
            return
        attr = "host_queue" if kind == "hosts" else "bench_queue"
        self.stdout.write(",".join(getattr(h, attr) for h in Host.objects.all()) or "default")
