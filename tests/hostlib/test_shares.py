"""Share config renderers: exact output for each preset and protocol setting, and every hostile value refused
with the field named (share parameters are a classic NAS injection surface)."""

import os

import pytest

from hostlib import dfree_helper, nfs, posix, samba
from hostlib.configfiles import InvalidShare
from hostlib.nfs import NfsExportSpec, NfsGlobals
from hostlib.samba import SmbGlobals, SmbShareSpec
from tests.support.runners import FIXTURES, FakeHost


def test_a_general_share_with_previous_versions_renders_exactly():
    text = samba.render_smb(SmbGlobals(), [SmbShareSpec(name="docs", path="/tank/docs", comment="Team documents")])
    assert text == (
        "# Written by Tarn from its database; edits here are replaced on the next apply.\n"
        "[global]\n"
        "   server min protocol = SMB2_10\n"
        "   client min protocol = SMB2_10\n"
        "   server multi channel support = no\n"
        "   server smb encrypt = default\n"
        "   server signing = default\n"
        "   workgroup = WORKGROUP\n"
        "   server string = Tarn NAS\n"
        "   map to guest = Bad User\n"
        "   dfree command = /usr/local/lib/tarn/tarn-dfree\n"
        "   dfree cache time = 10\n"
        "\n"
        "[docs]\n"
        "   path = /tank/docs\n"
        "   comment = Team documents\n"
        "   read only = no\n"
        "   browseable = yes\n"
        "   guest ok = no\n"
        '   root preexec = /usr/bin/mountpoint -q --nofollow "/tank/docs"\n'
        "   root preexec close = yes\n"
        "   inherit permissions = yes\n"
        "   map archive = no\n"
        "   shadow:snapdir = .zfs/snapshot\n"
        "   shadow:sort = desc\n"
        "   shadow:format = auto-%Y-%m-%d_%H-%M\n"
        "   shadow:localtime = no\n"
        "   vfs objects = shadow_copy2\n"
    )


def test_presets_and_globals():
    g = SmbGlobals(min_protocol="SMB3", multichannel=True, encryption="required", signing="mandatory")
    tm = SmbShareSpec(name="tm", path="/tank/tm", preset="time_machine", time_machine_quota="500G")
    private = SmbShareSpec(name="home", path="/tank/home", preset="private", previous_versions=False)
    archive = SmbShareSpec(name="old", path="/tank/old", preset="archive", valid_users=["alice", "@staff"])
    text = samba.render_smb(g, [tm, private, archive])
    assert "server min protocol = SMB3_00" in text and "server smb encrypt = required" in text
    assert "server multi channel support = yes" in text and "server signing = mandatory" in text
    tm_section = text.split("[tm]")[1]
    assert "vfs objects = catia fruit streams_xattr shadow_copy2" in tm_section
    assert "fruit:time machine = yes" in tm_section and "fruit:time machine max size = 500G" in tm_section
    home = text.split("[home]")[1].split("[")[0]
    assert "path = /tank/home/%U" in home and "valid users = %U" in home and "browseable = no" in home
    assert "shadow" not in home
    assert "inherit permissions" not in home and "create mask = 0600" in home, (
        "private: its masks, whatever a folder says"
    )
    assert "inherit permissions = yes" in tm_section, "the others: a new file or folder follows its folder (its ACL)"
    old = text.split("[old]")[1].split("[")[0]
    assert "read only = yes" in old and "valid users = alice @staff" in old
    assert text.index("[home]") < text.index("[old]") < text.index("[tm]")  # sorted: stable files, clean diffs


@pytest.mark.parametrize("preset", list(samba.PRESETS))
def test_every_preset_refuses_connections_while_its_dataset_is_not_mounted(preset):
    """A locked or unmounted dataset leaves an empty folder on the parent filesystem: smbd must refuse the share
    rather than serve that folder. The check is on the dataset's mountpoint, never a private share's %U folder."""
    share = SmbShareSpec(name="vault", path="/tank/vault", preset=preset, time_machine_quota="")
    section = samba.render_smb(SmbGlobals(), [share]).split("[vault]\n")[1].splitlines()
    assert '   root preexec = /usr/bin/mountpoint -q --nofollow "/tank/vault"' in section
    assert "   root preexec close = yes" in section
    assert sum("preexec" in line for line in section) == 2  # no user-level preexec that could run first or instead


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"name": "docs]\n[evil"}, "name"),
        ({"name": "a b"}, "name"),
        ({"name": "global"}, "name"),
        ({"name": "IPC$"}, "name"),
        ({"name": "-x"}, "name"),
        ({"comment": "ok\n   root preexec = /bin/sh -c id"}, "comment"),
        ({"comment": "line \\"}, "comment"),
        ({"comment": "%U home"}, "comment"),
        ({"comment": "include = /etc/shadow ; x"}, "comment"),
        ({"path": "/tank/../etc"}, "path"),
        ({"path": "/tank/a/.zfs/snapshot"}, "path"),
        ({"path": "tank/a"}, "path"),
        ({"path": "/tank/a b"}, "path"),
        ({"valid_users": ["alice", "bob\n[x]"]}, "valid_users"),
        ({"valid_users": ["%U"]}, "valid_users"),
        ({"hosts_allow": ["10.0.0.0/8", "EXCEPT\n"]}, "hosts_allow"),
        ({"hosts_deny": ["a;b"]}, "hosts_deny"),
        ({"preset": "evil"}, "preset"),
        ({"snapshot_prefix": "auto-%Y"}, "snapshot_prefix"),
        ({"time_machine_quota": "1G; x"}, "time_machine_quota"),
        ({"guest_ok": True, "valid_users": ["alice"]}, "guest_ok"),
    ],
)
def test_hostile_smb_values_are_refused_naming_the_field(changes, field):
    spec = SmbShareSpec(**{"name": "docs", "path": "/tank/docs", **changes})
    with pytest.raises(InvalidShare) as caught:
        samba.render_smb(SmbGlobals(), [spec])
    assert field in caught.value.problems, caught.value.problems


def test_share_names_collide_ignoring_case():
    with pytest.raises(InvalidShare, match="ignore case"):
        samba.render_smb(SmbGlobals(), [SmbShareSpec("Docs", "/tank/a"), SmbShareSpec("docs", "/tank/b")])


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"min_protocol": "NT1"}, "min_protocol"),
        ({"workgroup": "WORK GROUP"}, "workgroup"),
        ({"server_string": "x\n[global]"}, "server_string"),
        ({"encryption": "on"}, "encryption"),
    ],
)
def test_bad_globals_are_refused(changes, field):
    with pytest.raises(InvalidShare) as caught:
        samba.render_smb(SmbGlobals(**changes), [])
    assert field in caught.value.problems


def test_exports_render_exactly_and_sync_root_squash_are_the_defaults():
    text = nfs.render_exports(
        [
            NfsExportSpec(path="/tank/b", clients=["10.0.0.0/24", "backup.lan"], read_only=True),
            NfsExportSpec(path="/tank/a", clients=["*"], squash="all_squash", anonuid=1000, anongid=1000),
        ]
    )
    assert text.splitlines()[1:] == [
        '"/tank/a" *(rw,sync,all_squash,sec=sys,no_subtree_check,mountpoint,anonuid=1000,anongid=1000)',
        '"/tank/b" 10.0.0.0/24(ro,sync,root_squash,sec=sys,no_subtree_check,mountpoint) '
        "backup.lan(ro,sync,root_squash,sec=sys,no_subtree_check,mountpoint)",
    ]


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"clients": ["10.0.0.0/24(rw,no_root_squash)"]}, "clients"),  # options smuggled in a client spec
        ({"clients": ["host name"]}, "clients"),
        ({"clients": ["a\n/etc *(rw)"]}, "clients"),
        ({"clients": []}, "clients"),
        ({"path": "/tank/a\n/ *"}, "path"),
        ({"path": '/tank/a"'}, "path"),
        ({"squash": "no_all_squash"}, "squash"),
        ({"sec": "none"}, "sec"),
        ({"anonuid": -1}, "anonuid"),
    ],
)
def test_hostile_nfs_values_are_refused_naming_the_field(changes, field):
    with pytest.raises(InvalidShare) as caught:
        nfs.render_exports([NfsExportSpec(**{"path": "/tank/a", "clients": ["10.0.0.1"], **changes})])
    assert field in caught.value.problems


def test_nfs_server_settings():
    assert "threads=16\nvers3=n\nvers4=y" in nfs.render_nfs_conf(NfsGlobals(v3=False, threads=16))
    with pytest.raises(InvalidShare, match="threads"):
        nfs.render_nfs_conf(NfsGlobals(threads=0))
    with pytest.raises(InvalidShare):
        nfs.render_nfs_conf(NfsGlobals(v3=False, v4=False))


def test_user_names_and_passwords():
    for bad in ("root", "Alice", "a b", "-x", "a" * 40, "bob\n"):
        with pytest.raises(InvalidShare):
            samba.check_user(bad)
    for bad in ("short", "x" * 129, "two\nlines"):
        with pytest.raises(InvalidShare):
            samba.check_password(bad)


def test_testparm_warnings_count_as_problems():
    out = 'Load smb config files from x\nIgnoring unknown parameter "frobnicate"\nLoaded services file OK.\n'
    assert samba.testparm_problems(out) == ['Ignoring unknown parameter "frobnicate"']


def test_nfsv3_mounts_are_read_from_mountds_rmtab():
    captured = "127.0.0.1:/tank/docs:0x00000001\n"  # the lab's /var/lib/nfs/rmtab after `mount -o vers=3`
    assert nfs.parse_rmtab(captured) == [{"address": "127.0.0.1", "name": "/tank/docs", "version": "3"}]
    # mountd writes an IPv6 client's colons as ';'; a count of 0 is a mount that was undone; junk is skipped.
    text = "fd00;;5:/tank/a:b:0x00000002\n10.0.0.9:/tank/b:0x00000000\nnonsense\n10.0.0.8:/tank/c:0xzz\n"
    assert nfs.parse_rmtab(text) == [{"address": "fd00::5", "name": "/tank/a:b", "version": "3"}]


@pytest.mark.parametrize(
    "path, owner, group, mode, field",
    [
        ("/tank/docs", "alice\n", "users", "2775", "owner"),  # fullmatch: a trailing newline is not a name
        ("/tank/docs", "alice", "-g", "2775", "group"),
        ("/tank/docs", "alice", "users", "4777", "mode"),
        ("/tank/../etc", "alice", "users", "2775", "path"),
        ("/tank/docs/.zfs/snapshot", "alice", "users", "2775", "path"),
    ],
)
def test_folder_permissions_refuse_what_is_not_a_name_a_mode_or_a_share_path(path, owner, group, mode, field):
    with pytest.raises(InvalidShare) as caught:
        posix.check_folder(path, owner, group, mode)
    assert list(caught.value.problems) == [field]
    posix.check_folder("/tank/docs", "alice", "users", "0700")


@pytest.mark.parametrize(
    "client, text, everyone",
    [
        ("*", "*", True),
        ("**", "*", True),
        ("?*", "*", True),
        ("*.*", "*", True),
        ("0.0.0.0/0", "0.0.0.0/0", True),
        ("::/0", "::/0", True),
        ("10.0.0.0/7", "10.0.0.0/7", True),
        ("10.0.0.5/24", "10.0.0.0/24", False),
        ("10.0.0.5", "10.0.0.5", False),
        ("2001:db8::/32", "2001:db8::/32", False),
        ("backup.lan", "backup.lan", False),
        ("*.lan", "*.lan", False),
        ("@backup", "@backup", False),
    ],
)
def test_nfs_clients_are_read_as_exportfs_would(client, text, everyone):
    assert nfs.parse_client(client) == nfs.Client(text, everyone)


@pytest.mark.parametrize("client", ["10.0.0.0/0", "10.0.0.5/33", "256.1.1.1", "1.2.3", "-lan", "a..b", "x" * 254, ""])
def test_impossible_nfs_clients_are_refused(client):
    with pytest.raises(ValueError):
        nfs.parse_client(client)


def test_the_exports_file_holds_the_canonical_client():
    text = nfs.render_exports([NfsExportSpec(path="/tank/a", clients=["10.0.0.5/24", "?*"])])
    assert '"/tank/a" 10.0.0.0/24(rw,' in text and " *(rw," in text


@pytest.mark.parametrize("name", ["root", "www-data", "sshd", "nobody", "systemd-network", "_apt", "messagebus"])
def test_system_accounts_are_refused_by_name(name):
    with pytest.raises(InvalidShare):
        samba.check_user(name)


@pytest.mark.parametrize("users", [["root"], ["alice", "@root"]])
def test_a_share_cannot_let_root_in(users):
    with pytest.raises(InvalidShare) as caught:
        samba.render_smb(SmbGlobals(), [SmbShareSpec(name="docs", path="/tank/docs", valid_users=users)])
    assert "valid_users" in caught.value.problems


def test_exportfs_s_as_captured_in_the_lab_gives_each_path_and_client():
    text = (FIXTURES / "exportfs-s.txt").read_text()
    assert nfs.parse_exportfs_s(text) == [
        ("/xt/v", "127.0.0.1"),
        ("/xt/v", "10.0.0.0/24"),
        ("/xt/a-very-long-path-name-for-wrapping-output", "*"),
    ]
    fake = FakeHost().answer("exportfs", "-s", stdout=text)
    assert nfs.unexport(fake.transport(), ["/xt/v"]) == ["127.0.0.1:/xt/v", "10.0.0.0/24:/xt/v"]
    assert [a for a in fake.argvs if a[:2] == ["exportfs", "-u"]] == [
        ["exportfs", "-u", "127.0.0.1:/xt/v"],
        ["exportfs", "-u", "10.0.0.0/24:/xt/v"],
    ]


def test_the_dfree_command_gives_the_folders_numbers_where_it_finds_no_zfs_quota(tmp_path):
    """On this machine's ext4 (no ZFS): the folder's own size and free space, as statvfs says, in KiB."""
    st = os.statvfs(tmp_path)
    total, free = dfree_helper.answer(str(tmp_path), os.getuid())
    assert total == st.f_blocks * st.f_frsize // 1024
    assert abs(free - st.f_bavail * st.f_frsize // 1024) < 1024 * 64  # other writers on the disk meanwhile


def test_the_dfree_command_caps_size_and_free_space_at_the_users_quota(tmp_path, monkeypatch):
    monkeypatch.setattr(dfree_helper, "dataset_of", lambda dev: "tank/docs")
    monkeypatch.setattr(dfree_helper, "quota_of", lambda dataset, uid: (10 << 20, 3 << 20))
    assert dfree_helper.answer(str(tmp_path), 3001) == (10 << 10, 7 << 10)
    monkeypatch.setattr(dfree_helper, "quota_of", lambda dataset, uid: (10 << 20, 12 << 20))  # over: nothing free
    assert dfree_helper.answer(str(tmp_path), 3001) == (10 << 10, 0)
    monkeypatch.setattr(dfree_helper, "quota_of", lambda dataset, uid: (0, 3 << 20))  # no quota: the folder's own
    assert (
        dfree_helper.answer(str(tmp_path), 3001)[0]
        == os.statvfs(tmp_path).f_blocks * os.statvfs(tmp_path).f_frsize // 1024
    )
