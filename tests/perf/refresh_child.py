"""Run by tests.perf.storage in its own process: parse and save a pool's datasets and snapshots from saved
`zfs list` outputs with the refresh's own code, twice (into an empty inventory, then again with nothing
changed, as every periodic refresh of a quiet pool does, then with one snapshot of one dataset renamed), and print
the wall times and the peak RSS."""

import json
import os
import resource
import sys
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarn.settings")


def main(host_name: str, datasets_path: str, snapshots_path: str) -> None:
    import django

    django.setup()
    from django.db import transaction
    from django.utils import timezone

    from appliance.models import Host
    from pools.models import Pool
    from pools.services.inventory import _save_datasets

    host = Host.objects.get(name=host_name)
    now = timezone.now()
    pool, _ = Pool.objects.get_or_create(
        host=host, name="tank", defaults={"guid": "1", "state": "ONLINE", "observed_at": now}
    )
    datasets_text = open(datasets_path).read()
    snapshots_text = open(snapshots_path).read()
    seconds = []

    def save(text: str) -> None:
        started = time.monotonic()
        with transaction.atomic():
            _save_datasets(host, pool, "tank", None, datasets_text, text, now)
        seconds.append(time.monotonic() - started)

    save(snapshots_text)
    save(snapshots_text)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the harness copies the text below
    one = next((line.split("@")[0] for line in snapshots_text[:4096].splitlines()[-2:-1]), "")  # a dataset's name
    save(snapshots_text.replace(f"{one}@", f"{one}@new-", 1))  # one snapshot of it renamed
    print(json.dumps({"seconds": seconds[0], "unchanged_seconds": seconds[1], "one_changed_seconds": seconds[2],
                      "peak_rss_mb": peak}))  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:4])
