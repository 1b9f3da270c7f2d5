import django.db.models.deletion
import django.db.models.functions.text
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("appliance", "0003_operation_runner"),
        ("pools", "0008_shares_move_to_their_app"),
    ]

    # The tables exist (made by pools 0005, named pools_*): this only tells Django the shares app owns them.
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ShareSettings",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "smb_min_protocol",
                            models.CharField(
                                choices=[("SMB2", "SMB2"), ("SMB3", "SMB3")],
                                default="SMB2",
                                help_text="SMB1 is never offered: it is slow and unsafe. SMB3 shuts out very old clients.",
                                max_length=4,
                                verbose_name="SMB minimum protocol",
                            ),
                        ),
                        (
                            "smb_multichannel",
                            models.BooleanField(
                                default=False,
                                help_text="Lets one client use several NICs or queues at once.",
                                verbose_name="SMB multichannel",
                            ),
                        ),
                        (
                            "smb_encryption",
                            models.CharField(
                                choices=[
                                    ("default", "default"),
                                    ("if_required", "if_required"),
                                    ("desired", "desired"),
                                    ("required", "required"),
                                ],
                                default="default",
                                help_text="required refuses clients that cannot encrypt; costs CPU on 10GbE.",
                                max_length=12,
                                verbose_name="SMB encryption",
                            ),
                        ),
                        (
                            "smb_signing",
                            models.CharField(
                                choices=[("default", "default"), ("auto", "auto"), ("mandatory", "mandatory")],
                                default="default",
                                max_length=12,
                                verbose_name="SMB signing",
                            ),
                        ),
                        ("workgroup", models.CharField(default="WORKGROUP", max_length=15)),
                        ("server_string", models.CharField(default="Tarn NAS", max_length=64)),
                        ("nfs_v3", models.BooleanField(default=True, verbose_name="NFSv3")),
                        ("nfs_v4", models.BooleanField(default=True, verbose_name="NFSv4.1/4.2")),
                        (
                            "nfs_threads",
                            models.PositiveSmallIntegerField(
                                default=8,
                                help_text="More threads serve more clients at once; 8 per core is plenty.",
                                verbose_name="nfsd threads",
                            ),
                        ),
                        (
                            "host",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="share_settings",
                                to="appliance.host",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "pools_sharesettings",
                    },
                ),
                migrations.CreateModel(
                    name="ShareStatus",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("smb_sessions", models.JSONField(default=list)),
                        ("nfs_clients", models.JSONField(default=list)),
                        ("observed_at", models.DateTimeField()),
                        (
                            "host",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="share_status",
                                to="appliance.host",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "pools_sharestatus",
                    },
                ),
                migrations.CreateModel(
                    name="NfsExport",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("dataset", models.CharField(max_length=255)),
                        ("path", models.CharField(max_length=1024)),
                        (
                            "clients",
                            models.TextField(
                                help_text="One per line: a host, an address, a network (10.0.0.0/24) or *."
                            ),
                        ),
                        ("read_only", models.BooleanField(default=False)),
                        (
                            "squash",
                            models.CharField(
                                choices=[
                                    ("root_squash", "root_squash (client root becomes nobody)"),
                                    ("all_squash", "all_squash (everyone becomes the anonymous user)"),
                                    ("no_root_squash", "no_root_squash (client root is root here: trusted hosts only)"),
                                ],
                                default="root_squash",
                                max_length=16,
                            ),
                        ),
                        (
                            "anonuid",
                            models.PositiveIntegerField(
                                blank=True, help_text="The anonymous user's id (default 65534).", null=True
                            ),
                        ),
                        ("anongid", models.PositiveIntegerField(blank=True, null=True)),
                        (
                            "sec",
                            models.CharField(
                                choices=[("sys", "sys"), ("krb5", "krb5"), ("krb5i", "krb5i"), ("krb5p", "krb5p")],
                                default="sys",
                                max_length=8,
                            ),
                        ),
                        (
                            "async_writes",
                            models.BooleanField(
                                default=False,
                                help_text="Faster, but a server crash loses writes clients were told were safe.",
                            ),
                        ),
                        ("comment", models.CharField(blank=True, max_length=255)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "host",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="nfs_exports",
                                to="appliance.host",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "pools_nfsexport",
                        "ordering": ["host", "path"],
                        "constraints": [
                            models.UniqueConstraint(fields=("host", "path"), name="one_nfs_export_per_path")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="SambaUser",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("username", models.CharField(max_length=32)),
                        ("enabled", models.BooleanField(default=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "host",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="samba_users",
                                to="appliance.host",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "pools_sambauser",
                        "ordering": ["host", "username"],
                        "constraints": [
                            models.UniqueConstraint(fields=("host", "username"), name="one_samba_user_name_per_host")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="SmbShare",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(help_text="What clients see: \\\\server\\name.", max_length=80)),
                        (
                            "dataset",
                            models.CharField(
                                help_text="The dataset shared (its mountpoint is the share's path).", max_length=255
                            ),
                        ),
                        ("path", models.CharField(max_length=1024)),
                        ("comment", models.CharField(blank=True, max_length=255)),
                        (
                            "preset",
                            models.CharField(
                                choices=[
                                    ("general", "General purpose"),
                                    ("multi_user", "Multi-user (group-writable, permissions inherited)"),
                                    ("time_machine", "Time Machine (macOS backups)"),
                                    ("private", "Private per user (each user sees only their own folder)"),
                                    ("archive", "Read-only archive"),
                                ],
                                default="general",
                                max_length=16,
                            ),
                        ),
                        ("read_only", models.BooleanField(default=False)),
                        (
                            "browseable",
                            models.BooleanField(default=True, help_text="Listed when clients browse the server."),
                        ),
                        (
                            "guest_ok",
                            models.BooleanField(
                                default=False, help_text="Anyone on the network may connect without a password."
                            ),
                        ),
                        (
                            "valid_users",
                            models.CharField(
                                blank=True, help_text="Users and @groups allowed; empty: all.", max_length=1000
                            ),
                        ),
                        (
                            "hosts_allow",
                            models.CharField(
                                blank=True, help_text="Addresses or networks; empty: all.", max_length=1000
                            ),
                        ),
                        ("hosts_deny", models.CharField(blank=True, max_length=1000)),
                        (
                            "previous_versions",
                            models.BooleanField(
                                default=True,
                                help_text="Windows' Previous Versions tab lists the dataset's snapshots (up to 512).",
                            ),
                        ),
                        (
                            "snapshot_prefix",
                            models.CharField(
                                default="auto",
                                help_text="Previous Versions show snapshots named <prefix>-YYYY-MM-DD_HH-MM.",
                                max_length=40,
                            ),
                        ),
                        (
                            "time_machine_quota",
                            models.CharField(blank=True, help_text="Time Machine only: 500G, 2T…", max_length=8),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "host",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="smb_shares",
                                to="appliance.host",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "pools_smbshare",
                        "ordering": ["host", "name"],
                        "constraints": [
                            models.UniqueConstraint(
                                django.db.models.functions.text.Lower("name"),
                                models.F("host"),
                                name="one_smb_share_name_per_host",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
