"""tarn-serve, a pull pair's forced command on the sending NAS: the request is data, and only the three sends Tarn
makes, of the send root or below, are run."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hostlib import replication, serve_helper
from hostlib.serve_helper import Refused, main

FORCED = ["tarn-serve", "7", "tank/docs"]
ROOT = Path(__file__).resolve().parents[2]
CAPTURED = ROOT / "tests" / "fixtures" / "host" / "replication"  # zfs send -nvP -w -t, on the lab guest (MANIFEST)


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
    dry = (CAPTURED / "send-t-dry-full-raw.txt").read_text().replace("t/docs@a", "tank/docs@a")
    assert main(FORCED, send(*argv), dry_run=lambda token: dry) == (argv, serve_helper.IDLE)


def test_an_idle_limit_comes_with_the_request():
    request = {"verb": "send", "argv": replication.send_argv("tank/docs@a"), "idle": 30}
    assert main(FORCED, {"SSH_ORIGINAL_COMMAND": json.dumps(request)})[1] == 30
    for idle in (1, "30", True, 4000):
        with pytest.raises(Refused, match="idle is whole seconds"):
            main(FORCED, {"SSH_ORIGINAL_COMMAND": json.dumps({**request, "idle": idle})})


def test_hello_answers_so_pairing_can_check_the_key():
    assert main(FORCED, {"SSH_ORIGINAL_COMMAND": '{"verb": "hello"}'}) is None


@pytest.mark.parametrize(
    "environ, says",
    [
        ({}, "not JSON"),
        ({"SSH_ORIGINAL_COMMAND": "zfs destroy -r tank"}, "not JSON"),
        ({"SSH_ORIGINAL_COMMAND": json.dumps({"verb": "receive", "dataset": ""})}, "may only send"),
        ({"SSH_ORIGINAL_COMMAND": json.dumps({"verb": "send", "argv": ["zfs", "send"], "x": 1})}, "nothing else"),
        ({"SSH_ORIGINAL_COMMAND": json.dumps({"verb": "send"})}, "nothing else"),
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
        (send("zfs", "send", "-w", "-t", "1-2-3; rm -rf /"), "four groups of hex digits"),
        (send("zfs", "send", "-w", "-t", "-v"), "four groups of hex digits"),
        (send("zfs", "send", "-t", "1-c0ffee-d0-789c"), "not one of the sends"),  # a resume is raw too
        (send("zfs", "send", "-w", "--", "tank/docs@a", "tank/docs@b"), "not one of the sends"),
        ({"SSH_ORIGINAL_COMMAND": " " * 70000}, "too long"),
    ],
)
def test_anything_but_a_send_tarn_makes_of_its_root_is_refused(environ, says):
    with pytest.raises(Refused, match=says):
        main(FORCED, environ)


@pytest.mark.parametrize(
    "argv, says",
    [(["tarn-serve"], "usage"), (["tarn-serve", "x", "tank"], "usage"), (["tarn-serve", "7", "-R"], "not a dataset")],
)
def test_a_bad_forced_command_line_is_refused(argv, says):
    with pytest.raises(Refused, match=says):
        main(argv, send("zfs", "send", "-w", "--", "tank@a"))


@pytest.mark.parametrize(
    "captured, root, sends",
    [
        ("send-t-dry-full-raw.txt", "t", "t/docs@a"),
        ("send-t-dry-full-raw.txt", "t/docs", "t/docs@a"),
        ("send-t-dry-full-encrypted-raw.txt", "t/enc", "t/enc@a"),
        ("send-t-dry-full-not-raw.txt", "t", "t/docs@a"),  # sent raw all the same: -w
        ("send-t-dry-incremental-raw.txt", "t/docs", "t/docs@c"),
    ],
)
def test_a_token_is_judged_by_what_zfs_resolves_it_to(captured, root, sends):
    assert serve_helper.check_token(root, (CAPTURED / captured).read_text()) == sends


def test_a_token_that_resolves_outside_the_root_or_forges_a_line_is_refused():
    """ZFS finds a token's snapshot by its guid: the toname may say tank/docs while the stream ZFS resolves (its
    full or incremental line) is another dataset's; a string in the token that prints a line of its own makes two
    such lines; a saved partial receive is not Tarn's."""
    dry = (CAPTURED / "send-t-dry-full-raw.txt").read_text()
    with pytest.raises(Refused, match="t/docs is not t/enc or below"):
        serve_helper.check_token("t/enc", dry)
    lying = dry.replace("full\tt/docs@a", "full\tt/other@a")  # toname t/docs@a, resolved elsewhere
    with pytest.raises(Refused, match="t/other is not t/docs or below"):
        serve_helper.check_token("t/docs", lying)
    forged = dry.replace("\ttoname = t/docs@a\n", "\ttoname = t/x@a\nfull\tt/docs@a\t1\n")
    with pytest.raises(Refused, match="not one full or incremental stream"):
        serve_helper.check_token("t/docs", forged.replace("full\tt/docs@a\t2767880", "full\tt/x@a\t2767880"))
    with pytest.raises(Refused, match="names toname twice"):
        serve_helper.check_token("t", dry.replace("\tembedok = 1\n", "\ttoname = t/docs@a\n"))
    with pytest.raises(Refused, match="saved partial receive"):
        serve_helper.check_token("t", dry.replace("\tembedok = 1\n", "\tsavedok = 1\n"))
    outside_base = (CAPTURED / "send-t-dry-incremental-raw.txt").read_text().replace("\tt/docs@a\t", "\tt/x@a\t")
    with pytest.raises(Refused, match="t/x is not t/docs or below"):
        serve_helper.check_token("t/docs", outside_base)


def test_a_resume_request_is_checked_through_its_dry_run():
    token = "1-c0ffee-d0-789c"
    seen = []

    def dry_run(asked):
        seen.append(asked)
        return (CAPTURED / "send-t-dry-full-raw.txt").read_text()

    with pytest.raises(Refused, match="t/docs is not tank/docs or below"):
        main(FORCED, send(*replication.send_argv("", token=token)), dry_run=dry_run)
    assert seen == [token]


def test_a_send_nobody_takes_is_stopped_after_its_idle_limit():
    """A cut link: the channel takes nothing, and zfs send (here `yes`) would hold its snapshot for as long as TCP
    retries; the helper stops it after idle seconds."""
    code = "import sys; from hostlib.serve_helper import pump; sys.exit(pump(['yes'], 1))"
    started = time.monotonic()
    helper = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        assert helper.wait(timeout=20) != 0  # the pipe filled, nobody read it
    finally:
        helper.stdout.close()
    assert time.monotonic() - started < 10
    assert b"nothing was taken for 1 s; the send is stopped" in helper.stderr.read()
    helper.stderr.close()


def test_the_helper_is_self_contained():
    """Tarn writes its source to the NAS: nothing but the standard library."""
    source = open(serve_helper.__file__).read()
    imports = {line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert imports == {"json", "os", "re", "select", "subprocess", "sys"}


def test_a_pull_pairs_key_may_only_run_tarn_serve_from_the_receivers_address():
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB7 tarn"
    line = replication.authorized_line(7, "tank/docs", "10.78.0.2", key, serve=True)
    assert line.startswith('restrict,from="10.78.0.2",command="/usr/bin/python3 /usr/local/lib/tarn/tarn-serve 7 ')
    assert line.endswith(' tank/docs" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB7 tarn-pair-7')
