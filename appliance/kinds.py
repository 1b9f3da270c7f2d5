"""Renaming operation kinds in an app's data migration (a kind carries its app's label: `backups.restore`): the rows
of the old names follow, and go back when the migration is reversed. A backup's own database is migrated forward
when it is checked or restored, so its rows follow too."""

from django.db import migrations


def kinds_renamed(renamed: dict[str, str]) -> migrations.RunPython:
    """The migration step that renames Operation rows' kinds old -> new (and new -> old backwards): in kind, and in
    runner, which names a shared runner's kind (the storage commands' pools.command) when it is not the row's own."""

    def rename(apps, mapping):
        operations = apps.get_model("appliance", "Operation")
        for old, new in mapping.items():
            operations.objects.filter(kind=old).update(kind=new)
            operations.objects.filter(runner=old).update(runner=new)

    return migrations.RunPython(
        lambda apps, _: rename(apps, renamed), lambda apps, _: rename(apps, {new: old for old, new in renamed.items()})
    )
