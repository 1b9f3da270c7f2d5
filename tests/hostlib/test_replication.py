"""hostlib.replication: argv, the pairing lines, and parsers on output captured from the lab's OpenZFS."""

from pathlib import Path

import pytest

from hostlib import names, replication, send_helper
from hostlib.errors import error_for

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ3mFv1x0oQ0mZKxk6pQm1rJ2c7pX3Yv0aO2l3n0bq7k tarn-pair-3"


def test_the_receivers_line_allows_only_tarn_recv_into_its_root_from_the_sender():
    line = replication.authorized_line(3, "backup/lab", "10.78.0.1", KEY)
    assert line.startswith(
        'restrict,from="10.78.0.1",command="/usr/bin/python3 /usr/local/lib/tarn/tarn-recv 3 backup/lab" '
    )
    assert line.endswith(" tarn-pair-3")
    for bad_root, bad_sender, bad_key in [
        ("backup/lab x", "10.78.0.1", KEY),
        ("backup/lab", "10.78.0.1,0.0.0.0/0", KEY),
        ("backup/lab", "10.78.0.1", "ssh-rsa AAAA tarn"),
        ("backup/lab", "10.78.0.1", 'ssh-ed25519 AAAA" command="sh'),
    ]:
        with pytest.raises((ValueError, names.InvalidName)):
            replication.authorized_line(3, bad_root, bad_sender, bad_key)


def test_pairing_touches_only_its_own_line_of_authorized_keys():
    current = "ssh-ed25519 AAAAadmin admin@desk\nssh-rsa AAAAold tarn-pair-3\n# a comment\n"
    line = replication.authorized_line(3, "backup/lab", "10.78.0.1", KEY)
    paired = replication.with_line(current, 3, line)
    assert paired == f"ssh-ed25519 AAAAadmin admin@desk\n# a comment\n{line}\n"
    assert replication.with_line(paired, 3, line) == paired, "pairing again changes nothing"
    assert replication.with_line(paired, 4, None) == paired, "another pair's removal leaves this one"
    assert replication.with_line(paired, 3, None) == "ssh-ed25519 AAAAadmin admin@desk\n# a comment\n"
    assert replication.with_line("", 3, None) == ""


def test_send_argv_is_raw_and_exact():
    assert replication.send_argv("tank/docs@b", base="tank/docs@a", intermediates=True) == [
        "zfs",
        "send",
        "-w",
        "-I",
        "tank/docs@a",
        "--",
        "tank/docs@b",
    ]
    assert replication.send_argv("tank/docs@b", base="tank/docs#a") == [
        "zfs",
        "send",
        "-w",
        "-i",
        "tank/docs#a",
        "--",
        "tank/docs@b",
    ]
    assert replication.send_argv("tank/docs@b", dry_run=True) == [
        "zfs",
        "send",
        "-n",
        "-v",
        "-P",
        "-w",
        "--",
        "tank/docs@b",
    ]
    with pytest.raises(names.InvalidName):
        replication.send_argv("tank/docs@b", base="tank/docs#a", intermediates=True)
    with pytest.raises(names.InvalidName):
        replication.send_argv("", token="1-abc; rm -rf /")
    with pytest.raises(names.InvalidName):
        replication.send_argv("-R@x")


FAILS = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "replication"


@pytest.mark.parametrize(
    "fixture, code, action",
    [
        ("fail_interrupted.txt", "interrupted", "resume"),
        ("fail_stale_token.txt", "stale-token", "abort-and-replan"),
        ("fail_resume_first_full.txt", "stale-token", "abort-and-replan"),
    ],
)
def test_the_tools_own_words_name_the_cause(fixture, code, action):
    cause = replication.cause_of((FAILS / fixture).read_text())
    assert (cause.code, cause.action) == (code, action)


def test_a_cut_receive_says_where_to_resume():
    text = (FAILS / "fail_interrupted.txt").read_text()
    assert replication.RESUME_HINT.search(text)[1].startswith("1-dc538bd7a-f0-789c")


def test_tarns_own_words_for_a_stall_resume_the_transfer():
    for words in (replication.STALLED, replication.VANISHED):
        assert replication.cause_of(f"{words} ").action == "resume"


@pytest.mark.parametrize(
    "words",
    [
        "Timeout, server 10.78.0.2 not responding.",
        "ssh: connect to host 10.78.0.2 port 22: No route to host",
        "ssh: connect to host 10.78.0.2 port 22: Connection timed out",
        "Connection timed out during banner exchange",
        "ssh: connect to host 10.78.0.2 port 22: Connection refused",
        send_helper.LOST,
        "tarn-send: the data connection failed: No route to host",
    ],
)
def test_a_link_that_went_away_or_is_not_back_is_resumed(words):
    """ssh's words when the wire is cut (its alive probes) or still down at the next attempt (make perf saw the
    first one end a run as a plain failure); a target still booting (its sshd not listening yet); a session on the
    run's shared connection that ended with ssh's 255 and no words (the lab saw a crashed target's run stop on
    "the transfer failed" for want of them)."""
    assert replication.cause_of(words).action == "resume"


@pytest.mark.parametrize(
    "words, code",
    [
        ("Host key verification failed.\r\n", "host-key"),
        ("@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\r\n", "host-key"),
        ("root@10.78.0.2: Permission denied (publickey).\r\n", "key-refused"),
        ("tarn-recv: refused: this key may only receive", "refused"),
        ("tarn-serve: refused: tank/other is not tank/docs or below", "refused"),
    ],
)
def test_a_changed_host_key_or_a_refused_key_stops_the_run_and_says_so(words, code):
    """ssh's own words (OpenSSH 9.2) for a pinned host key that no longer matches and a key no longer allowed:
    never resumed (another attempt would meet the same), the cause named."""
    cause = replication.cause_of(words)
    assert (cause.code, cause.action) == (code, "stop")


@pytest.mark.parametrize(
    "words, code, action",
    [
        ("tarn-recv: refused: a receive into backup/lab/docs is still running", "busy", "retry"),
        ("tarn-recv: refused: no connection from 10.78.0.1 with the nonce within 30 s", "interrupted", "resume"),
        ("\ntarn-send: no data connection: [Errno 113] No route to host\n", "interrupted", "resume"),
    ],
)
def test_tarn_recvs_own_transient_refusals_are_tried_again(words, code, action):
    cause = replication.cause_of(words)
    assert (cause.code, cause.action) == (code, action)


def test_the_snapshots_something_was_cloned_from_are_read_in_one_call():
    """`zfs get clones` of a prune's victims (captured: @b cloned as docs-b, a restore beside the replica); a
    batch destroy naming @b fails whole, with the clone's name as its last line (captured too)."""
    argv = replication.clones_argv("backup/lab/docs", ["a", "b", "c"])
    assert argv == ["zfs", "get", "-H", "-p", "-o", "name,value", "clones", "--"] + [
        f"backup/lab/docs@{s}" for s in "abc"
    ]
    assert replication.parse_clones((FAILS / "get-clones.txt").read_text()) == {"b": ["backup/lab/docs-b"]}
    assert replication.parse_clones("t/r@b\tt/r-b,t/r-b2\n") == {"b": ["t/r-b", "t/r-b2"]}
    with pytest.raises(names.InvalidName):
        replication.clones_argv("backup/lab/docs", ["-R"])
    failed = error_for(["zfs", "destroy"], 1, (FAILS / "fail_destroy_clones.txt").read_text())
    assert str(failed) == "zfs: backup/lab/docs-b", "what a run said before it left cloned snapshots out"
