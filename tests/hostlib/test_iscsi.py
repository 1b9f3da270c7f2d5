"""hostlib.iscsi's logic: names, secrets and portals refused with their field named, the saveconfig.json rtslib
restores, and a session read off configfs (its `info` captured from the lab's target)."""

import json

import pytest

from hostlib import iscsi
from hostlib import runner as iscsi_runner
from hostlib.configfiles import ConfigRejected
from hostlib.iscsi import Acl, InvalidIscsi, Lun, Target
from tests.support.runners import FakeHost

IQN = "iqn.2026-11.lan.office:nas1"
CLIENT = "iqn.1991-05.com.microsoft:client1"


@pytest.mark.parametrize(
    "name",
    ["IQN.2026-11.Lan.Office:NAS1", "iqn.2026-11.lan.office", "eui.0123456789ABCDEF", "naa.5001405abcdef012",
     "naa.6001405abcdef0126001405abcdef012"],
)  # fmt: skip
def test_good_node_names_are_kept_lower_case(name):
    assert iscsi.node_name(name) == name.lower()


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("", "required"),
        ("iqn.2026-13.lan.office:nas", "month"),
        ("iqn.2026-11.local:nas", "two parts"),  # rtslib refuses a one-part domain
        ("iqn.2026-11.lan.office:nas one", "only"),
        ("iqn.2026-11.lan_x.office", "only"),
        ("eui.0123", "16 hexadecimal"),
        ("naa.xyz", "16 or 32"),
        ("target1", "starts with"),
        ("iqn.2026-11.lan.office:" + "a" * 201, "223 bytes"),
    ],
)
def test_malformed_or_long_names_are_refused_with_the_field(name, words):
    with pytest.raises(InvalidIscsi, match=words) as caught:
        iscsi.node_name(name, "initiator")
    assert caught.value.field == "initiator"


def test_a_223_byte_name_is_the_longest_taken():
    name = "iqn.2026-11.lan.office:" + "a" * (223 - 23)
    assert len(name) == 223 and iscsi.node_name(name) == name


@pytest.mark.parametrize("value", [0, 65536, "x", -1])
def test_ports_outside_1_to_65535_are_refused(value):
    with pytest.raises(InvalidIscsi, match="1 to 65535"):
        iscsi.port(value)


@pytest.mark.parametrize(
    ("given", "wanted"),
    [
        ("0.0.0.0", [("0.0.0.0", 3260)]),
        ("10.77.0.2:3261", [("10.77.0.2", 3261)]),
        ("10.77.0.2\n10.78.0.2:3260", [("10.77.0.2", 3260), ("10.78.0.2", 3260)]),  # multipath: one on each network
        ("10.77.0.2, [fd00::2]:3260", [("10.77.0.2", 3260), ("fd00::2", 3260)]),
        ("[::]", [("::", 3260)]),
        ("0.0.0.0:3260\n10.77.0.2:3261", [("0.0.0.0", 3260), ("10.77.0.2", 3261)]),  # another port: both listen
    ],
)
def test_portals_are_lines_of_address_and_port(given, wanted):
    assert iscsi.portals(given) == wanted
    assert iscsi.portals([iscsi.portal_text(*p) for p in wanted]) == wanted  # shown as typed back


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ("", "a portal at least"),
        ("nas.lan", "IPv4 or IPv6"),
        ("10.77.0.2:0", "1 to 65535"),
        ("10.77.0.2:65536", "1 to 65535"),
        ("fd00::2:99999", "IPv4 or IPv6"),  # an IPv6 portal's port goes after brackets: never guessed
        ("[fd00::2", "[address]"),
        ("[fe80::1%eth0]:3260", "no zone"),
        ("fe80::1%a]b", "no zone"),
        ("10.77.0.2\n10.77.0.2:3260", "given twice"),
        ("0.0.0.0\n10.77.0.2", "every address"),
        ("[::]:3260\n0.0.0.0:3260", "every address"),
        ("\n".join(f"10.0.0.{i}" for i in range(1, 18)), "at most 16"),
    ],
)
def test_bad_portals_are_refused_on_their_field(given, words):
    with pytest.raises(InvalidIscsi, match=words) as refused:
        iscsi.portals(given)
    assert refused.value.field == "portals"


@pytest.mark.parametrize(("secret", "ok"), [("a" * 11, False), ("a" * 12, True), ("a" * 16, True), ("a" * 17, False),
                                            ("with space 12", False), ("tab\there12345", False)])  # fmt: skip
def test_chap_secrets_are_12_to_16_printable_characters(secret, ok):
    if ok:
        assert iscsi.chap_secret(secret, "chap_secret") == secret
    else:
        with pytest.raises(InvalidIscsi) as caught:
            iscsi.chap_secret(secret, "chap_secret")
        assert caught.value.field == "chap_secret"


def lun(index=0, zvol="tank/vol1", serial="6b1e0c2a-4f7d-4e0a-9c3b-2d5f8a1e7c40"):
    return Lun(index=index, zvol=zvol, serial=serial)


def test_two_zvols_whose_names_fold_alike_are_two_storage_objects():
    a, b = lun(0, "pool/a-b", "aaaa-1"), lun(1, "pool-a/b", "bbbb-2")
    config = json.loads(iscsi.render([Target(IQN, luns=[a, b])]))
    assert [s["name"] for s in config["storage_objects"]] == ["tarn-aaaa1", "tarn-bbbb2"]


def test_a_zvol_is_one_lun_only():
    targets = [Target(IQN, luns=[lun(0)]), Target("iqn.2026-11.lan.office:nas2", luns=[lun(0, serial="other")])]
    with pytest.raises(InvalidIscsi, match="tank/vol1 is LUN 0 of iqn.2026-11.lan.office:nas1") as caught:
        iscsi.check(targets)
    assert caught.value.field == "zvol"


def test_mutual_chap_needs_its_own_secret_and_chap_is_all_or_none():
    same = Acl(CLIENT, "client1", "InitSecret-001", "nas", "InitSecret-001")
    with pytest.raises(InvalidIscsi, match="must differ"):
        iscsi.check([Target(IQN, acls=[same])])
    mixed = [Acl(CLIENT, "client1", "InitSecret-001"), Acl("iqn.1993-08.org.debian:01:abc")]
    with pytest.raises(InvalidIscsi, match="every initiator"):
        iscsi.check([Target(IQN, acls=mixed)])


def test_the_rendered_configuration_is_what_rtslib_restores():
    target = Target(
        IQN,
        portals=[("0.0.0.0", 3260), ("fd00::1", 3261)],
        luns=[lun(0)],
        acls=[Acl(CLIENT, "client1", "InitSecret-001", "nas", "TargSecret-002")],
    )
    config = json.loads(iscsi.render([target]))
    (storage,) = config["storage_objects"]
    assert storage == {
        "plugin": "block", "name": "tarn-6b1e0c2a4f7d4e0a9c3b2d5f8a1e7c40", "dev": "/dev/zvol/tank/vol1",
        "wwn": "6b1e0c2a-4f7d-4e0a-9c3b-2d5f8a1e7c40", "readonly": False, "write_back": False,
        "attributes": {"emulate_tpu": 1, "emulate_write_cache": 0},
    }  # fmt: skip
    (tpg,) = config["targets"][0]["tpgs"]
    assert tpg["attributes"]["authentication"] == 1 and tpg["attributes"]["generate_node_acls"] == 0
    assert tpg["parameters"] == {"AuthMethod": "CHAP"}
    assert tpg["portals"][1] == {"ip_address": "[fd00::1]", "port": 3261, "iser": False}
    assert tpg["luns"] == [{"index": 0, "storage_object": "/backstores/block/tarn-6b1e0c2a4f7d4e0a9c3b2d5f8a1e7c40"}]
    (acl,) = tpg["node_acls"]
    assert acl["chap_userid"] == "client1" and acl["chap_mutual_password"] == "TargSecret-002"
    assert acl["mapped_luns"] == [{"index": 0, "tpg_lun": 0, "write_protect": False}]


INFO = """InitiatorName: iqn.1993-08.org.debian:01:second
InitiatorAlias: lab-guest
LIO Session ID: 1   ISID: 0x00 02 3d 00 00 03  TSIH: 2  SessionType: Normal
Session State: TARG_SESS_STATE_LOGGED_IN
---------------------[iSCSI Session Values]-----------------------
  CmdSN/WR  :  CmdSN/WC  :  ExpCmdSN  :  MaxCmdSN  :     ITT    :     TTT
 0x00000040   0x00000040   0x0000001e   0x0000005d   0x0000001e   0x0000001c
----------------------[iSCSI Connections]-------------------------
CID: 0  Connection State: TARG_CONN_STATE_LOGGED_IN
   Address 10.78.0.2 TCP  StatSN: 0x62243e48
"""  # captured from the lab's target (tests/lab/test_iscsi.py prints it)


def test_a_session_is_read_off_its_acl_info():
    found = iscsi.parse_session(IQN, "iqn.1993-08.org.debian:01:second", INFO)
    assert found.state == "LOGGED_IN" and found.addresses == ["10.78.0.2"]
    none = "No active iSCSI Session for Initiator Endpoint: iqn.1993-08.org.debian:01:abc\n"
    assert iscsi.parse_session(IQN, "iqn.1993-08.org.debian:01:abc", none) is None


def test_a_configuration_rtslib_skips_part_of_is_rolled_back_to_the_old_one():
    fake = FakeHost()
    t = fake.transport()
    first = [Target(IQN, portals=[("0.0.0.0", 3260)], luns=[lun(0)])]
    assert iscsi.apply(t, first) is True
    old = fake.files[iscsi.CONFIG]
    assert "/dev/zvol/tank/vol1" in old and fake.files[iscsi.BOOT_DROPIN] == iscsi.BOOT_DROPIN_TEXT
    assert iscsi.apply(t, first) is False  # nothing to do: no restore, no dropped sessions
    assert sum(a[:2] == ["targetctl", "restore"] for a in fake.argvs) == 1
    fake.answer("targetctl", "restore", stdout="Could not create StorageObject tarn-tank-vol2: not a TYPE_DISK block "
                "device, skipped\n")  # fmt: skip
    with pytest.raises(ConfigRejected, match="tarn-tank-vol2"):
        iscsi.apply(t, [Target(IQN, portals=[("0.0.0.0", 3260)], luns=[lun(0), lun(1, "tank/vol2", "00ff")])])
    assert fake.files[iscsi.CONFIG] == old  # the old one written back and restored
    assert [a[:2] for a in fake.argvs].count(["targetctl", "restore"]) == 3


class _Udev(iscsi_runner.Transport):
    """stat answers as udev makes the zvols' links: the second one appears on the third look."""

    def __init__(self):
        super().__init__()
        self.looks = 0

    def _execute(self, argv, **kwargs):
        self.looks += 1
        paths = argv[argv.index("--") + 1 :]
        there = [p for p in paths if p.endswith("vol1") or self.looks >= 3]
        code = 0 if len(there) == len(paths) else 1
        return iscsi_runner.CommandResult(argv, code, "".join(f"{p}\n" for p in there), "", 0.0)


def test_a_luns_zvol_is_waited_for_until_its_device_appears_and_refused_if_it_never_does(monkeypatch):
    monkeypatch.setattr(iscsi.time, "sleep", lambda s: None)
    targets = [Target(IQN, luns=[Lun(0, "tank/vol1", "s1"), Lun(1, "tank/vol2", "s2")])]
    udev = _Udev()
    iscsi._zvols_here(udev, targets)
    assert udev.looks == 3
    with pytest.raises(InvalidIscsi, match="tank/vol2 has no device") as refused:
        iscsi._zvols_here(_Udev(), targets, wait=0)
    assert refused.value.field == "zvol"
