"""Operation kinds carry their app's label: pool.*, dataset.*, zvol.create, snapshot.*, inventory.refresh and the
storage commands' shared runner (storage.command) become pools.*: a pool's own verb stays bare (pools.destroy,
pools.scrub_start), another noun's is joined to it (pools.dataset_create, pools.snapshot_hold)."""

from django.db import migrations

from appliance.kinds import kinds_renamed

POOL = ("create", "create_encrypted", "destroy", "export", "import", "add")
DEVICE = ("offline", "online", "clear", "replace", "attach", "detach")
STEPS = {"import": ("scan",), "scrub": ("start", "pause", "stop"), "trim": ("start", "suspend", "cancel")}
DATASET = ("create", "set", "inherit", "destroy", "rename")
SNAPSHOT = ("create", "rollback", "destroy", "clone", "hold", "release", "task")

RENAMED = {
    **{f"pool.{verb}": f"pools.{verb}" for verb in POOL + DEVICE},
    **{f"pool.{what}.{verb}": f"pools.{what}_{verb}" for what, verbs in STEPS.items() for verb in verbs},
    **{f"dataset.{verb}": f"pools.dataset_{verb}" for verb in DATASET},
    "zvol.create": "pools.zvol_create",
    **{f"snapshot.{verb}": f"pools.snapshot_{verb}" for verb in SNAPSHOT},
    "inventory.refresh": "pools.refresh",
    "storage.command": "pools.command",
}


class Migration(migrations.Migration):
    dependencies = [
        ("appliance", "0010_verbose_names"),
        ("pools", "0009_snapshot_createtxg"),
    ]

    operations = [kinds_renamed(RENAMED)]
