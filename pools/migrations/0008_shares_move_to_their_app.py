from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("pools", "0007_scrub_schedule"),
    ]

    # The share models move to the shares app with their tables (renamed by shares 0002): only Django's idea of
    # which app owns them changes here, no table is touched.
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(
                    model_name="nfsexport",
                    name="one_nfs_export_per_path",
                ),
                migrations.RemoveConstraint(
                    model_name="sambauser",
                    name="one_samba_user_name_per_host",
                ),
                migrations.RemoveField(
                    model_name="sharesettings",
                    name="host",
                ),
                migrations.RemoveField(
                    model_name="sharestatus",
                    name="host",
                ),
                migrations.RemoveConstraint(
                    model_name="smbshare",
                    name="one_smb_share_name_per_host",
                ),
                migrations.RemoveField(
                    model_name="nfsexport",
                    name="host",
                ),
                migrations.RemoveField(
                    model_name="sambauser",
                    name="host",
                ),
                migrations.DeleteModel(
                    name="ShareSettings",
                ),
                migrations.DeleteModel(
                    name="ShareStatus",
                ),
                migrations.RemoveField(
                    model_name="smbshare",
                    name="host",
                ),
                migrations.DeleteModel(
                    name="NfsExport",
                ),
                migrations.DeleteModel(
                    name="SambaUser",
                ),
                migrations.DeleteModel(
                    name="SmbShare",
                ),
            ],
            database_operations=[],
        ),
    ]
