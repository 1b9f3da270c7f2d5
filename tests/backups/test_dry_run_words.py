"""A restore's dry run names each table in words, as its model's Meta says: "Share settings", "SMB shares" and
"Audit entries", never "Share settingss", "Smb shares" or a table name."""

import re

import pytest
from django.apps import apps

from appliance.models import Host
from backups.database import TARN_APPS
from shares.models import ShareSettings, SmbShare
from tests.backups.test_backups import PASS, _backup, _check

VOWELS = "aeiou"


@pytest.mark.django_db(transaction=True)
def test_the_dry_run_names_tables_as_an_admin_reads_them(data_dir, run_queued, admin_user, local_host):
    backup = _backup(run_queued, admin_user)
    ShareSettings.objects.create(host=local_host)
    SmbShare.objects.create(host=local_host, name="media", path="/tank/media", dataset="tank/media")
    Host.objects.create(name="nas2", address="10.0.0.6")

    op = _check(run_queued, backup, admin_user, PASS)
    assert op.status == "succeeded", op.message
    backup.refresh_from_db()
    named = [s["model"] for s in backup.checked["sections"]] + [c["model"] for c in backup.checked["counts"]]
    assert "Share settings (shares)" in named and "SMB shares (shares)" in named and "Hosts (appliance)" in named
    for name in named:
        assert not re.search(r"(ss|[^aeiou]ys|ths) \(", name), name
        assert not re.match(r"[A-Z][a-z]+[A-Z]", name), name  # no class or table names


def test_every_model_has_a_plural_an_admin_would_write():
    """A naive "s" after a word ending in s, x, sh, ch, th or a consonant and y is a Meta without its plural."""
    for model in apps.get_models():
        if model._meta.app_label not in TARN_APPS - {"django_celery_beat"}:
            continue
        singular, plural = str(model._meta.verbose_name), str(model._meta.verbose_name_plural)
        if plural == singular + "s":
            bad = singular.endswith(("s", "x", "sh", "ch", "th")) or (
                singular[-1] == "y" and singular[-2] not in VOWELS
            )
            assert not bad, f"{model._meta.label}: {plural}"
