"""manage.py tarn_layout [--group tarn --sock-group tarn-sock --front-group tarn-front]: set the data dir's layout (appliance.datadir): its folders, their owners and
modes, and an older install's files moved once (the database into db/, uploads into uploads/). Run by `make run`
before the database is opened, and again once the keys exist; changes nothing the second time."""

from django.core.management.base import BaseCommand, CommandError

from appliance.datadir import LayoutError, layout


class Command(BaseCommand):
    help = __doc__
    requires_system_checks = []  # nothing may open the database before it is moved

    def add_arguments(self, parser):
        parser.add_argument("--group", default="", help="The web's group (as root): it may read what the web reads.")
        parser.add_argument("--sock-group", default="", help="The group of the web's socket (the web and the front).")
        parser.add_argument(
            "--front-group", default="", help="The HTTPS front's workers' group: their temporary files."
        )

    def handle(self, *args, **options):
        try:
            done = layout(options["group"], sock_group=options["sock_group"], front_group=options["front_group"])
        except (LayoutError, OSError) as exc:
            raise CommandError(str(exc)) from None
        for line in done:
            self.stdout.write(f"data dir: {line}")
