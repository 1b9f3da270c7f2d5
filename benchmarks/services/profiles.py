"""Admins' profiles: a copy of a built-in profile (or of another copy) with its job's fields changed, each field
validated as any fio job (nobody types a job file), and the scratch dataset's properties."""

from dataclasses import asdict, fields, replace

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from appliance.checks import confirmed
from benchmarks.models import CustomProfile
from benchmarks.selectors import storage_profile
from benchmarks.services.runs import check_properties
from hostlib import fio

EDITABLE = tuple(f.name for f in fields(fio.FioJob) if f.name != "name")


def profile_copy(
    *, user, based_on: str, title: str, represents: str = "", job: dict | None = None, properties: dict | None = None
) -> CustomProfile:
    """job: fields changed from the original's first job (a sweep's other jobs are not copied)."""
    original = storage_profile(based_on)
    if original is None:
        raise ValidationError({"based_on": "Choose a storage profile to copy."})
    title = " ".join(title.split())
    if not 1 <= len(title) <= 80:
        raise ValidationError({"title": "A title of 1 to 80 characters."})
    changed = {k: v for k, v in (job or {}).items() if k in EDITABLE}
    unknown = set(job or {}) - set(EDITABLE)
    if unknown:
        raise ValidationError({"job": f"Not a job field: {', '.join(sorted(unknown))}."})
    # fio's job name from the title: ASCII letters and digits only (isalnum() also takes "ä" and "٣", which fio.NAME
    # refuses, blaming a field nobody sent)
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in title.lower()).strip("-")[:40] or "custom"
    copied = replace(original.jobs[0], name=name, **changed)
    problems = fio.problems(copied)
    if problems:
        raise ValidationError(problems)
    try:
        with transaction.atomic():
            return CustomProfile.objects.create(
                title=title,
                represents=" ".join(represents.split())[:200],
                based_on=original.key,
                jobs=[asdict(copied)],
                created_by=user,
                properties={**original.properties, **check_properties(properties or {})},
            )
    except IntegrityError:
        raise ValidationError({"title": f"A profile named {title} exists already."}) from None


def profile_delete(*, profile: CustomProfile, user, confirm: str) -> bool:
    """The profile goes; runs made with it keep their jobs (their manifest), so they can still run again."""
    confirmed(confirm, profile.title, f"Type the profile's title ({profile.title}) to delete it.")
    profile.delete()
    return True
