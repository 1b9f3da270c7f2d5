"""The local transport: real processes, exact argv, timeouts that kill, typed errors, read-only mode."""

import grp
import json
import os
import pwd
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from hostlib import errors, runner
from hostlib.errors import PathNotAllowed
from hostlib.runner import LocalTransport, SSHTransport

ECHO_ARGV = ["python3", "-c", "import json, sys; print(json.dumps(sys.argv[1:]))"]
HOSTILE = [
    "; rm -rf /",
    "a|b",
    "x && y",
    "$(id)",
    "`id`",
    "line1\nline2",
    "'single'",
    '"double"',
    "-rf",
    "--help",
    "back\\slash",
    "  spaced  ",
    "*",
    "~",
    "><@!#%",
    "",
]


def test_it_passes_every_argument_unchanged_as_one_argument():
    result = LocalTransport().run([*ECHO_ARGV, *HOSTILE])
    assert json.loads(result.stdout) == HOSTILE


def test_it_runs_with_the_c_locale_and_a_fixed_path():
    script = "import os; print(os.environ['LC_ALL'], os.environ['PATH'])"
    out = LocalTransport().run(["python3", "-c", script]).stdout.split()
    assert out[0] == "C"
    assert "/usr/sbin" in out[1] and ".pyenv" not in out[1]


ENV_ARGV = ["python3", "-c", "import os, sys; print(os.environ.get('PASSWD_FD'), sys.stdin.readline().strip())"]


def test_input_read_late_and_larger_than_a_pipe_reaches_the_command_whole():
    """A command that reads its input after the first slice (a loaded machine, a slow start) gets all of it and its
    end: the runner once left the rest unwritten and stdin open, and the command waited out its timeout."""
    late = ["python3", "-c", "import sys, time; time.sleep(0.3); print(len(sys.stdin.buffer.read()))"]
    started = time.monotonic()
    assert LocalTransport().run(late, input="x" * 1_000_000, timeout=30).stdout.strip() == "1000000"
    assert time.monotonic() - started < 10


def test_a_command_that_never_reads_its_input_still_ends():
    done = LocalTransport().run(["python3", "-c", "print('ok')"], input="y" * 1_000_000, timeout=30)
    assert done.stdout.strip() == "ok"


def test_an_allowed_variable_reaches_the_command_and_any_other_is_refused():
    """Samba's tools read a password from the fd PASSWD_FD names: stdin, never argv."""
    assert LocalTransport().run(ENV_ARGV, env={"PASSWD_FD": "0"}, input="s3cret\n").stdout.split() == ["0", "s3cret"]
    for env in ({"LD_PRELOAD": "/tmp/x.so"}, {"PASSWD_FD": "0; id"}, {"PASSWD_FD": "0 PATH=/tmp"}, {"PASSWD_FD": ""}):
        with pytest.raises(errors.ToolNotAllowed):
            LocalTransport().run(ENV_ARGV, env=env)


def test_it_refuses_a_tool_that_is_not_allowlisted():
    with pytest.raises(errors.ToolNotAllowed):
        LocalTransport().run(["rm", "-rf", "/tmp/nothing"])
    with pytest.raises(errors.ToolNotAllowed):
        LocalTransport().run(["/usr/bin/python3", "-c", "1"])  # paths are not a way around the list


def test_timeout_kills_the_child_and_its_children(tmp_path):
    pidfile = tmp_path / "child.pid"
    # The child starts a grandchild that would outlive a plain kill of the direct child.
    script = (
        "import os, subprocess, sys, time\n"
        f"p = subprocess.Popen(['sleep', '60']); open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    with pytest.raises(errors.CommandTimeout) as caught:
        LocalTransport().run(["python3", "-c", script], timeout=1.5)
    assert time.monotonic() - started < 5
    assert "did not finish within 1.5 s" in str(caught.value)
    grandchild = int(pidfile.read_text())
    time.sleep(0.2)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    """True while the process runs; a killed one waiting to be reaped (zombie) counts as dead."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        ("cannot open 'tank': no such pool\n", errors.NotFound),
        ("cannot create 'tank/a': dataset already exists\n", errors.AlreadyExists),
        ("cannot export 'tank': pool is busy\n", errors.Busy),
        ("permission denied\n", errors.PermissionDenied),
        ("something else broke\n", errors.CommandFailed),
    ],
)
def test_non_zero_exit_becomes_a_typed_error_with_the_tools_message(stderr, expected):
    script = f"import sys; sys.stderr.write({stderr!r}); sys.exit(1)"
    with pytest.raises(expected) as caught:
        LocalTransport().run(["python3", "-c", script])
    assert type(caught.value) is expected
    assert caught.value.returncode == 1
    assert str(caught.value) == f"python3: {stderr.strip()}"


def test_check_false_returns_the_result_instead_of_raising():
    result = LocalTransport().run(["python3", "-c", "import sys; sys.exit(3)"], check=False)
    assert result.returncode == 3


def test_read_only_refuses_mutating_commands_and_runs_reads():
    seen = []
    ro = LocalTransport(read_only=True, on_command=seen.append)
    with pytest.raises(errors.ReadOnlyHost):
        ro.run(["true"], mutating=True)
    assert ro.run(["true"]).returncode == 0
    with pytest.raises(errors.ReadOnlyHost):
        ro.write_file("/etc/tarn/x.conf", "x")
    assert seen == []


def test_mutating_commands_reach_the_audit_hook_and_reads_do_not():
    seen = []
    t = LocalTransport(on_command=seen.append)
    t.run(["true"])
    t.run(["true"], mutating=True)
    assert [r.argv for r in seen] == [["true"]]
    assert seen[0].mutating and seen[0].returncode == 0


def test_write_file_is_atomic_reports_change_and_keeps_mode(tmp_path):
    t = LocalTransport(writable_dirs=(str(tmp_path),))
    target = tmp_path / "sub" / "a.conf"
    assert t.write_file(str(target), "one\n", mode=0o640) is True
    assert target.read_text() == "one\n" and (target.stat().st_mode & 0o777) == 0o640
    assert t.write_file(str(target), "one\n", mode=0o640) is False
    assert t.write_file(str(target), "two\n", mode=0o640) is True
    assert target.read_text() == "two\n"
    assert [p.name for p in target.parent.iterdir()] == ["a.conf"]  # no temp files left behind


def test_write_file_refuses_symlinks_and_paths_outside_the_allowed_dirs(tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (tmp_path / "secret").write_text("keep")
    (allowed / "link.conf").symlink_to(tmp_path / "secret")
    t = LocalTransport(writable_dirs=(str(allowed),))
    with pytest.raises(errors.PathNotAllowed):
        t.write_file(str(allowed / "link.conf"), "x")
    with pytest.raises(errors.PathNotAllowed):
        t.write_file(str(tmp_path / "elsewhere.conf"), "x")
    with pytest.raises(errors.PathNotAllowed):
        t.write_file(str(allowed / ".." / "escape.conf"), "x")
    assert (tmp_path / "secret").read_text() == "keep"
    assert not (tmp_path / "elsewhere.conf").exists() and not (tmp_path / "escape.conf").exists()


def test_ssh_argv_is_exact_and_quotes_the_remote_command():
    t = SSHTransport(
        address="nas.example",
        port=2200,
        user="root",
        identity_file="/k",
        host_keys=["ssh-ed25519 AAAA"],
        state_dir="/tmp/tarn-test-ssh",
    )
    argv = t._ssh_argv(["zfs", "list", "-H", "a b;c"])
    assert argv[0] == "ssh" and argv[-3:-1] == ["--", "nas.example"]
    assert (
        argv[-1]
        == "LC_ALL=C LANG=C PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin zfs list -H 'a b;c'"
    )
    assert "StrictHostKeyChecking=yes" in argv and "BatchMode=yes" in argv
    assert argv[argv.index("-p") + 1] == "2200"


def test_a_folder_change_never_follows_a_link(tmp_path):
    """Share trees are writable by users: a link planted where a folder goes is refused, its target untouched."""
    target = tmp_path / "etc"
    target.mkdir(mode=0o755)
    share = tmp_path / "share"
    share.mkdir()
    (share / "alice").symlink_to(target)
    t = LocalTransport()
    owner = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    with pytest.raises(PathNotAllowed, match="symlink"):
        t.folder(str(share / "alice"), owner, group, 0o700, create=True)
    assert target.stat().st_mode & 0o777 == 0o755
    (tmp_path / "linked").symlink_to(share)  # a link higher up the path is refused too
    with pytest.raises(PathNotAllowed, match="symlink"):
        t.folder(str(tmp_path / "linked" / "bob"), owner, group, 0o700, create=True)
    assert not (share / "bob").exists()
    made = t.folder(str(share / "bob"), owner, group, 0o2770, create=True)
    assert made.endswith(f"→ {owner}:{group} 2770") and (share / "bob").stat().st_mode & 0o7777 == 0o2770


def test_a_benchmark_scratch_folder_is_made_new_and_removed_whole_never_through_a_link(tmp_path):
    """In a share users can write: a name planted in advance (a link to /etc, or a folder) is refused; removal takes
    everything in it but never what a link in it points to, and nothing that is not a tarnbench-<n> folder."""
    t = LocalTransport()
    share, target = tmp_path / "share", tmp_path / "etc"
    share.mkdir()
    target.mkdir(mode=0o755)
    (target / "passwd").write_text("root")
    (share / "tarnbench-1").symlink_to(target)
    with pytest.raises(PathNotAllowed, match="exists already"):
        t.scratch(str(share / "tarnbench-1"), create=True)
    with pytest.raises(PathNotAllowed):
        t.scratch(str(share / "tarnbench-1"), create=False)  # rmtree refuses a link
    assert target.stat().st_mode & 0o777 == 0o755 and (target / "passwd").exists()
    assert t.scratch(str(share / "tarnbench-2"), create=True) == "created"
    assert (share / "tarnbench-2").stat().st_mode & 0o7777 == 0o777
    (share / "tarnbench-2" / "job.0.0").write_bytes(b"x" * 10)
    (share / "tarnbench-2" / "escape").symlink_to(target)
    assert t.scratch(str(share / "tarnbench-2"), create=False) == "removed"
    assert not (share / "tarnbench-2").exists() and (target / "passwd").exists()
    assert t.scratch(str(share / "tarnbench-2"), create=False) == "absent"
    for wrong in (share, share / "docs", share / "tarnbench-x", share / ".." / "tarnbench-3"):
        with pytest.raises(PathNotAllowed):
            t.scratch(str(wrong), create=True)


def test_a_scratch_folder_made_with_a_tag_is_removed_only_if_it_still_carries_it(tmp_path):
    """A run removes only what it made: a folder of the same name that was there before (the create was refused)
    is left alone with its files, and a client of the share cannot forge the mark (trusted.* is root's)."""
    share = tmp_path / "share"
    share.mkdir()
    t = LocalTransport()
    theirs = share / "tarnbench-7"
    theirs.mkdir()
    (theirs / "keep.txt").write_text("an admin's file")
    with pytest.raises(PathNotAllowed, match="exists already"):
        t.scratch(str(theirs), create=True, tag="bench-7")
    assert t.scratch(str(theirs), create=False, tag="bench-7") == "not ours"
    assert (theirs / "keep.txt").read_text() == "an admin's file"
    os.setxattr(theirs, "user.tarn.made-by", b"bench-7")  # what an SMB or NFS client could set: not the mark
    assert t.scratch(str(theirs), create=False, tag="bench-7") == "not ours"
    ours = share / "tarnbench-8"
    assert t.scratch(str(ours), create=True, tag="bench-8") == "created"
    assert os.getxattr(ours, "trusted.tarn.made-by") == b"bench-8"
    assert t.scratch(str(ours), create=False, tag="bench-9") == "not ours"  # another run's mark
    assert t.scratch(str(ours), create=False, tag="bench-8") == "removed" and not ours.exists()


def test_a_missing_tool_answers_as_a_shell_does_not_with_a_python_exception(monkeypatch):
    """Over SSH a tool the host lacks is the shell's exit 127; locally it is the same, so a missing ethtool on a
    host is a typed error (or a result with check=False), never a FileNotFoundError from deep in a worker."""
    monkeypatch.setattr(runner, "SAFE_PATH", "/nonexistent")
    t = LocalTransport()
    result = t.run(["ethtool", "-i", "eth0"], check=False)
    assert (result.returncode, result.stdout, result.stderr) == (127, "", "ethtool: command not found\n")
    with pytest.raises(errors.ToolMissing, match="^ethtool is not installed on this host$"):
        t.run(["ethtool", "-i", "eth0"])


def test_links_are_read_without_ethtool_with_its_fields_unknown(monkeypatch, tmp_path):
    """A fresh Debian has no ethtool: the 5-minute link read still works (driver, speed, rings, offloads unknown)."""
    import shutil  # noqa: PLC0415

    from hostlib import net  # noqa: PLC0415

    (tmp_path / "ip").symlink_to(shutil.which("ip"))
    monkeypatch.setattr(runner, "SAFE_PATH", str(tmp_path))
    links = net.read_links(LocalTransport(read_only=True))
    assert links and all(x.driver == "" and x.speed_mbps is None and x.offloads == {} for x in links)


def test_a_command_that_prints_without_end_is_stopped_at_the_output_cap_and_nothing_is_read():
    """A hostile or broken host printing 1 GiB: stopped once past the cap, in about the time the cap takes to
    write, and Tarn's memory does not grow by the output."""
    import resource  # noqa: PLC0415

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    with pytest.raises(errors.OutputTooLarge) as caught:
        LocalTransport().run(["cat", "--", "/dev/zero"], timeout=60, max_output=8 << 20)
    assert time.monotonic() - started < 10
    assert str(caught.value) == "cat printed more than 8 MiB and was stopped"
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 8 << 10  # KiB: less than the cap
    # Within the cap all of it arrives; a quick command is not slowed by the watching.
    started = time.monotonic()
    out = LocalTransport().run(["python3", "-c", "print('x' * 1000000)"], max_output=8 << 20).stdout
    assert len(out) == 1_000_001 and time.monotonic() - started < 5


@pytest.fixture
def walkable_share():
    """A share folder anyone may write, on a path anyone may walk (pytest's tmp_path is 0700)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as top:
        os.chmod(top, 0o755)
        share = Path(top) / "share"
        share.mkdir()
        os.chmod(share, 0o777)
        yield share


def test_a_client_writing_into_the_scratch_folder_while_it_is_removed_cannot_keep_it(walkable_share):
    """A client of the share (here: a process as nobody, as a squashed NFS client) keeps adding to the scratch
    folder while the run removes it: the removal takes the folder from it first (root's alone), then removes it."""
    t = LocalTransport()
    folder = walkable_share / "tarnbench-9"
    assert t.scratch(str(folder), create=True, tag="bench-9") == "created"
    writer = (
        "import os, sys\n"
        "for n in range(10**9):\n"
        "    try: os.symlink('/etc/passwd', f'{sys.argv[1]}/f{n % 50}')\n"
        "    except OSError: pass\n"
    )
    nobody = pwd.getpwnam("nobody")
    client = subprocess.Popen(
        ["python3", "-c", writer, str(folder)], user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[]
    )
    try:
        deadline = time.monotonic() + 10
        while not any(folder.iterdir()):  # the client is writing
            assert time.monotonic() < deadline and client.poll() is None, "the client never wrote"
            time.sleep(0.01)
        assert t.scratch(str(folder), create=False, tag="bench-9") == "removed"
        assert not folder.exists()
    finally:
        client.kill()
        client.wait()


def _immutable(path) -> bool:
    return "i" in subprocess.run(["lsattr", "-d", str(path)], capture_output=True, text=True).stdout.split()[0]


def test_a_mount_folder_is_sealed_through_its_descriptor_and_a_link_on_its_way_is_refused(tmp_path):
    """A locked dataset's mount folder lies in its parent's filesystem, which a share's users may write: a link
    planted as the folder, or as a folder on its way, is refused (never sealed, never its target), and the folder
    that was checked is the one made immutable."""
    if os.geteuid() != 0:
        pytest.skip("the immutable flag is root's (CAP_LINUX_IMMUTABLE)")
    t, share, target = LocalTransport(), tmp_path / "share", tmp_path / "etc"
    share.mkdir()
    (target / "vault").mkdir(parents=True)
    (share / "vault").symlink_to(target / "vault")
    (share / "home").symlink_to(target)
    try:
        for planted in (share / "vault", share / "home" / "vault"):
            for seal in (True, False):
                with pytest.raises(PathNotAllowed, match="symlink"):
                    t.mount_folder(str(planted), seal=seal)
        assert not _immutable(target / "vault")  # chattr +i by path would have sealed the link's target
        (share / "docs").mkdir()
        assert t.mount_folder(str(share / "docs"), seal=False) == "checked" and not _immutable(share / "docs")
        assert t.mount_folder(str(share / "docs"), seal=True) == "sealed" and _immutable(share / "docs")
        assert t.mount_folder(str(share / "docs"), seal=True) == "sealed"  # again: nothing changes
        with pytest.raises(PermissionError):
            (share / "docs" / "stray").touch()
        assert t.mount_folder(str(share / "new"), seal=False) == "absent" and not (share / "new").exists()
        assert t.mount_folder(str(share / "new"), seal=True) == "sealed" and _immutable(share / "new")
        assert t.mount_folder("/proc", seal=False) == "mounted"  # something is mounted there: nothing done
    finally:
        for folder in (share / "docs", share / "new"):
            if folder.exists():
                subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_the_ssh_control_dir_can_be_another_private_one_and_a_shared_one_is_refused(monkeypatch):
    mine = Path(tempfile.mkdtemp(prefix="tarn-t-")) / "ctl"  # short: pytest's tmp_path is over the limit
    monkeypatch.setenv("TARN_SSH_CONTROL_DIR", str(mine))
    assert runner._control_dir() == str(mine) and (mine.stat().st_mode & 0o777) == 0o700
    mine.chmod(0o755)  # others could plant a socket there
    with pytest.raises(errors.HostUnreachable, match="not a private directory"):
        runner._control_dir()
    for wrong in ("relative/ctl", "/tmp/" + "x" * 60):
        monkeypatch.setenv("TARN_SSH_CONTROL_DIR", wrong)
        with pytest.raises(errors.HostUnreachable, match="absolute path of at most 60"):
            runner._control_dir()


# A conversation: a program kept running to answer several questions, a line each way (hostlib.runner.kept).
ECHO_LINES = ["python3", "-c", "import sys\nfor line in sys.stdin: print(line.strip()[::-1], flush=True)"]


def test_a_kept_program_answers_question_after_question_and_is_kept_for_the_next_block():
    runner.forget_conversations()
    t = LocalTransport()
    with runner.kept(t, ECHO_LINES, longest=5) as talk:
        assert talk.ask(b"abc", timeout=5) == b"cba" and talk.ask(b"xyz", timeout=5) == b"zyx"
        first = talk.proc.pid
    with runner.kept(t, ECHO_LINES, longest=5) as again:
        assert again.proc.pid == first and again.ask(b"12", timeout=5) == b"21"
    with pytest.raises(ValueError, match="one line"):
        again.ask(b"two\nlines", timeout=5)
    assert runner.forget_conversations() == 1 and not _alive(first)


def test_a_program_that_ended_is_said_and_the_next_block_starts_another():
    runner.forget_conversations()
    t = LocalTransport()
    with runner.kept(t, ECHO_LINES, longest=5) as talk:
        talk.ask(b"a", timeout=5)
        os.kill(talk.proc.pid, 9)  # as a kept program whose idle time ran out
        talk.proc.wait(5)
        with pytest.raises(errors.ConversationEnded):
            talk.ask(b"b", timeout=5)
    with runner.kept(t, ECHO_LINES, longest=5) as other:
        assert other.proc.pid != talk.proc.pid and other.ask(b"ok", timeout=5) == b"ko"
    runner.forget_conversations()


def test_a_question_past_its_timeout_or_an_answer_past_the_cap_ends_the_conversation():
    runner.forget_conversations()
    t = LocalTransport()
    slow = ["python3", "-c", "import sys, time\nfor line in sys.stdin: time.sleep(60)"]
    started = time.monotonic()
    with runner.kept(t, slow, longest=5) as talk, pytest.raises(errors.CommandTimeout):
        talk.ask(b"x", timeout=0.5)
    assert time.monotonic() - started < 4 and not _alive(talk.proc.pid)
    loud = ["python3", "-c", "import sys\nfor line in sys.stdin: print('x' * 3000000, flush=True)"]
    with runner.kept(t, loud, longest=5) as talk, pytest.raises(errors.OutputTooLarge):
        talk.ask(b"x", timeout=5, max_output=1 << 20)
    assert not _alive(talk.proc.pid) and runner.forget_conversations() == 0  # neither was kept


def test_a_conversation_is_refused_for_a_tool_off_the_list_and_kept_only_by_transports_that_can():
    with pytest.raises(errors.ToolNotAllowed), runner.kept(LocalTransport(), ["bash", "-c", "cat"], longest=5):
        pass
    with runner.kept(runner.Transport(), ECHO_LINES, longest=5) as talk:
        assert talk is None  # asked the usual way, a command a question
    ssh = SSHTransport(address="192.0.2.1", identity_file="/nonexistent", host_keys=["ssh-ed25519 AAAA"])
    with runner.kept(ssh, ECHO_LINES, longest=5) as talk:
        assert talk is None  # no shared connection yet: the usual way makes one


def test_a_kept_program_idle_too_long_or_near_its_lifetime_is_not_used_again(monkeypatch):
    runner.forget_conversations()
    t = LocalTransport()
    with runner.kept(t, ECHO_LINES, longest=5) as talk:
        talk.used -= runner.KEPT_IDLE + 1
    with runner.kept(t, ECHO_LINES, longest=5) as fresh:
        assert fresh.proc.pid != talk.proc.pid and not _alive(talk.proc.pid)
    with runner.kept(t, ECHO_LINES, longest=runner.KEPT_LIFETIME) as newer:
        assert newer.proc.pid != fresh.proc.pid  # a question as long as its lifetime goes to a new one
    monkeypatch.setattr(runner, "KEPT_MOST", 1)
    with runner.kept(t, [*ECHO_LINES, "other"], longest=5) as second:  # another program: another key
        pass
    assert list(runner._kept.values()) == [second] and not _alive(newer.proc.pid)
    runner.forget_conversations()


def test_a_program_that_never_reads_its_questions_cannot_hold_the_asker():
    runner.forget_conversations()
    deaf = ["python3", "-c", "import time\ntime.sleep(60)"]
    started = time.monotonic()
    with runner.kept(LocalTransport(), deaf, longest=5) as talk, pytest.raises(errors.CommandTimeout):
        talk.ask(b"x" * (8 << 20), timeout=1)  # far more than a pipe holds
    assert time.monotonic() - started < 4 and not _alive(talk.proc.pid) and runner.forget_conversations() == 0


def test_a_conversation_failing_between_question_and_answer_is_never_asked_again(monkeypatch):
    runner.forget_conversations()
    t = LocalTransport()
    with runner.kept(t, ECHO_LINES, longest=5) as talk:
        monkeypatch.setattr(talk, "_receive", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
        with pytest.raises(KeyboardInterrupt):
            talk.ask(b"first", timeout=5)  # its answer, unread, would be the next question's
        with pytest.raises(errors.ConversationEnded):
            talk.ask(b"second", timeout=5)
    assert not _alive(talk.proc.pid) and runner.forget_conversations() == 0


def test_a_forked_child_keeps_none_of_its_parents_conversations():
    runner.forget_conversations()
    with runner.kept(LocalTransport(), ECHO_LINES, longest=5) as talk:
        talk.ask(b"x", timeout=5)
    child = os.fork()
    if child == 0:
        os._exit(0 if not runner._kept and not runner._kept_lock.locked() else 1)
    assert os.waitpid(child, 0)[1] == 0 and len(runner._kept) == 1 and talk.alive
    runner.forget_conversations()
