"""Print the Celery queues a worker kind consumes: default, hosts (host.<name>…) or bench (bench.<name>…). --hosts:
only the hosts whose names match these patterns (comma-separated, shell-style: nas1*,lab): a worker on a second
machine serving some hosts' queues."""

from fnmatch import fnmatchcase

from django.core.management.base import BaseCommand

from appliance.models import Host


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=["default", "hosts", "bench"])
        parser.add_argument("--hosts", default="*", help="Host name patterns, comma-separated (default: every host).")

    def handle(self, *args, kind, hosts, **options):
        if kind == "default":
            self.stdout.write("default")
            return
        attr = "host_queue" if kind == "hosts" else "bench_queue"
        patterns = [p.strip() for p in hosts.split(",") if p.strip()]
        chosen = [h for h in Host.objects.all() if any(fnmatchcase(h.name, p) for p in patterns)]
        # No host yet: the default queue (a worker needs one); none matching the patterns given: a queue nothing is
        # ever sent to, so a second machine's worker never takes the first one's default work.
        fallback = "default" if hosts == "*" else "tarn.none"
        self.stdout.write(",".join(getattr(h, attr) for h in chosen) or fallback)
