"""manage.py tarn_layout [--group tarn]: set the data dir's layout (appliance.datadir): its folders, their owners and
modes, and an older install's files moved once (the database into db/, uploads into uploads/). Run by `make run`
before the database is opened, and again once the keys exist; changes nothing the second time."""

from django.core.management.base import BaseCommand, CommandError

from appliance.datadir import LayoutError, layout


class Command(BaseCommand):
    help = __doc__
    requires_system_checks = []  # nothing may open the database before it is moved

    def add_arguments(self, parser):
        parser.add_argument("--group", default="", help="The web's group (as root): it may read what the web reads.")

    def handle(self, *args, **options):
        try:
            done = layout(options["group"])
        except (LayoutError, OSError) as exc:
            raise CommandError(str(exc)) from None
        for line in done:
            self.stdout.write(f"data dir: {line}")
