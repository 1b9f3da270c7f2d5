"""tarn-serve, a pull pair's forced command on the sending NAS: the request is data, and only the three sends Tarn
makes, of the send root or below, are run."""

import json

import pytest

from hostlib import replication, serve_helper
from hostlib.serve_helper import Refused, main

FORCED = ["tarn-serve", "7", "tank/docs"]


def send(*argv) -> dict:
    return {"SSH_ORIGINAL_COMMAND": json.dumps({"verb": "send", "argv": list(argv)})}


@pytest.mark.parametrize(
    "argv",
    [
        replication.send_argv("tank/docs@a"),
        replication.send_argv("tank/docs/child@b", base="tank/docs/child@a", intermediates=True),
        replication.send_argv("tank/docs@b", base="tank/docs#a"),
        replication.send_argv("", token="1-c0ffee-d0-789c"),
    ],
)
def test_the_sends_tarn_makes_are_run_as_they_are(argv):
    assert main(FORCED, send(*argv)) == argv


def test_hello_answers_so_pairing_can_check_the_key():
    assert main(FORCED, {"SSH_ORIGINAL_COMMAND": '{"verb": "hello"}'}) is None


@pytest.mark.parametrize(
    "environ, says",
    [
        ({}, "not JSON"),
        ({"SSH_ORIGINAL_COMMAND": "zfs destroy -r tank"}, "not JSON"),
        ({"SSH_ORIGINAL_COMMAND": json.dumps({"verb": "receive", "dataset": ""})}, "may only send"),
        ({"SSH_ORIGINAL_COMMAND": json.dumps({"verb": "send", "argv": ["zfs", "send"], "x": 1})}, "nothing else"),
        (send("zfs", "destroy", "--", "tank/docs@a"), "is a zfs send"),
        (send("sh", "-c", "zfs send tank/docs@a"), "is a zfs send"),
        (send("zfs", "send", "-w", "--", "tank/other@a"), "tank/other is not tank/docs or below"),
        (send("zfs", "send", "-w", "--", "tank/docsx@a"), "is not tank/docs or below"),
        (send("zfs", "send", "-w", "--", "tank/docs/../other@a"), "not a dataset"),
        (send("zfs", "send", "-w", "--", "tank/docs"), "not a snapshot"),
        (send("zfs", "send", "-w", "--", "tank/docs@-x"), "not a snapshot or bookmark name"),
        (send("zfs", "send", "--", "tank/docs@a"), "not one of the sends"),  # not raw: it would decrypt
        (send("zfs", "send", "-w", "-R", "--", "tank/docs@a"), "not one of the sends"),
        (send("zfs", "send", "-w", "-i", "tank/other@a", "--", "tank/docs@b"), "is not tank/docs or below"),
        (send("zfs", "send", "-w", "-i", "tank/docs/c@a", "--", "tank/docs@b"), "of the same dataset"),
        (send("zfs", "send", "-w", "-I", "tank/docs#a", "--", "tank/docs@b"), "not a snapshot"),
        (send("zfs", "send", "-t", "1-2-3; rm -rf /"), "four groups of hex digits"),
        (send("zfs", "send", "-t", "-v"), "four groups of hex digits"),
        (send("zfs", "send", "-w", "--", "tank/docs@a", "tank/docs@b"), "not one of the sends"),
        ({"SSH_ORIGINAL_COMMAND": " " * 70000}, "too long"),
    ],
)
def test_anything_but_a_send_tarn_makes_of_its_root_is_refused(environ, says):
    with pytest.raises(Refused, match=says):
        main(FORCED, environ)


@pytest.mark.parametrize("argv", [["tarn-serve"], ["tarn-serve", "x", "tank"], ["tarn-serve", "7", "-R"]])
def test_a_bad_forced_command_line_is_refused(argv):
    with pytest.raises(Refused):
        main(argv, send("zfs", "send", "-w", "--", "tank@a"))


def test_a_resume_tokens_own_snapshot_must_lie_below_the_root_too():
    """`zfs send -nvP -t` prints the token's fields, one `\\tkey = value` line each (as parse_estimate reads)."""
    text = "resume token contents:\nnvlist version: 0\n\tobject = 0x2\n\toffset = 0x5e0000\n\ttoname = tank/other@a\n"
    name = serve_helper.token_target(text)
    assert name == "tank/other@a"
    with pytest.raises(Refused, match="is not tank/docs or below"):
        serve_helper._version("tank/docs", name, "@")
    with pytest.raises(Refused, match="names no snapshot"):
        serve_helper.token_target("size\t100\n")


def test_the_helper_is_self_contained():
    """Tarn writes its source to the NAS: nothing but the standard library."""
    source = open(serve_helper.__file__).read()
    imports = {line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert imports == {"json", "os", "re", "subprocess", "sys"}


def test_a_pull_pairs_key_may_only_run_tarn_serve_from_the_receivers_address():
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB7 tarn"
    line = replication.authorized_line(7, "tank/docs", "10.78.0.2", key, serve=True)
    assert line.startswith('restrict,from="10.78.0.2",command="/usr/bin/python3 /usr/local/lib/tarn/tarn-serve 7 ')
    assert line.endswith(' tank/docs" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB7 tarn-pair-7')
