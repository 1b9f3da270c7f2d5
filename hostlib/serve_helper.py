"""tarn-serve: the only thing a pull pair's key may do on the sending NAS.

A pull pair turns the connection round: the receiving NAS holds the key and dials the sender, so the sender holds
nothing that can reach the copies (a sender taken over cannot delete its backups). Installed root-owned at
SERVE_PATH and named in the key's authorized_keys line as its forced command:

    restrict,from="<receiver's address>",command="/usr/bin/python3 <SERVE_PATH> <pair> <source root>" ssh-ed25519 …

so whatever the receiver's ssh asks for, sshd runs this instead and hands the request over in SSH_ORIGINAL_COMMAND.
That text is read as data (one JSON object), never run by a shell: the argv it names must be one of the three
shapes Tarn's sends take, of the source root or below it, and is then run as it is, its stream spliced into the
channel (the bytes never pass through Python).

Requests: {"verb": "hello"} (Tarn's check of a new pair: answers "tarn-serve <pair> <root>"),
          {"verb": "send", "argv": ["zfs", "send", "-w", "--", "<root>[/…]@<snap>"]}
          {"verb": "send", "argv": ["zfs", "send", "-w", "-i" | "-I", "<same dataset>@<snap> | #<bookmark>", "--", …]}
          {"verb": "send", "argv": ["zfs", "send", "-w", "-t", "<resume token>"]} (what the token resolves to, read
          with `zfs send -nvP -w -t`, must lie below the root too: see check_token; -w makes it raw whatever
          the token says)
          and optionally "idle": seconds (2-3600): when the receiving side takes nothing for that long (a cut
          link sshd would not notice for many minutes, with zfs send holding its snapshot meanwhile), the send
          is stopped here.

Self-contained (standard library only): Tarn writes this file's source to the NAS.
"""

import json
import os
import re
import select
import subprocess
import sys

SERVE_PATH = "/usr/local/lib/tarn/tarn-serve"
_COMPONENT = re.compile(r"[A-Za-z0-9_.:-]{1,255}")
_PAIR = re.compile(r"[0-9]{1,12}")
_TOKEN = re.compile(r"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+-[0-9a-f]+")
MAX_REQUEST = 65536  # a resume token runs to a few kilobytes
IDLE = 60
CHUNK = 1 << 20
ENV = {"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


class Refused(Exception):
    pass


def _dataset(name):
    parts = name.split("/")
    if (
        not name
        or len(name) > 255
        or any(not _COMPONENT.fullmatch(p) or p[0] == "-" or p in (".", "..") for p in parts)
    ):
        raise Refused(f"not a dataset: {name!r}")
    return name


def _below(root, dataset):
    if dataset != root and not dataset.startswith(root + "/"):
        raise Refused(f"{dataset} is not {root} or below it")
    return dataset


def _version(root, name, marks):
    """dataset@snap (or, with "#" in marks, dataset#bookmark) of root or below; (dataset, mark)."""
    for mark in marks:
        if mark in name:
            dataset, _, short = name.partition(mark)
            if not _COMPONENT.fullmatch(short) or short.startswith("-"):
                raise Refused(f"not a snapshot or bookmark name: {name!r}")
            return _below(root, _dataset(dataset)), mark
    raise Refused(f"not a snapshot: {name!r}")


def send_argv(root, request):
    """The argv a request names, once it is one of the shapes Tarn sends, of root or below; else Refused."""
    if not isinstance(request, dict) or request.get("verb") != "send":
        raise Refused("this key may only send")
    if not {"verb", "argv"} <= set(request) <= {"verb", "argv", "idle"}:
        raise Refused("a send request has a verb, an argv and an idle limit, nothing else")
    idle = request.get("idle", IDLE)
    if type(idle) is not int or not 2 <= idle <= 3600:
        raise Refused("idle is whole seconds from 2 to 3600")
    argv = request["argv"]
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or argv[:2] != ["zfs", "send"]:
        raise Refused("the argv is a zfs send")
    rest = argv[2:]
    if len(rest) == 3 and rest[:2] == ["-w", "-t"]:
        if not _TOKEN.fullmatch(rest[2]):
            raise Refused("a resume token is four groups of hex digits joined by '-'")
        return argv  # what it resolves to is checked against the root from its dry run (check_token)
    if len(rest) == 3 and rest[:2] == ["-w", "--"]:
        _version(root, rest[2], "@")
        return argv
    if len(rest) == 5 and rest[0] == "-w" and rest[1] in ("-i", "-I") and rest[3] == "--":
        dataset, _ = _version(root, rest[4], "@")
        base, mark = _version(root, rest[2], "@#" if rest[1] == "-i" else "@")
        if base != dataset:
            raise Refused("an incremental's base is a snapshot or bookmark of the same dataset")
        return argv
    raise Refused("not one of the sends Tarn makes (-w full, -w -i/-I incremental, -w -t resume)")


def check_token(root, dry):
    """What a resume token would send, from `zfs send -nvP -w -t <token>`'s own stdout (dry), checked; the snapshot.

    The token is the caller's to write, and ZFS resolves it by its toguid (searching the toname dataset, its
    children and its parents), not by its toname: so the ends checked are those of the one `full` or
    `incremental` line ZFS prints for the stream it resolved, root or below (a string in the token that tries
    to print a line of its own makes two). A saved partial receive (savedok) is not one Tarn sends. Raw is not
    the token's to say: the send runs with -w."""
    fields, ends = set(), []
    for line in dry.splitlines():
        if line.startswith("\t") and not line.startswith("\t\t"):
            key = line[1:].partition(" = ")[0].strip()
            if key in fields:
                raise Refused(f"the resume token names {key} twice")
            fields.add(key)
            continue
        parts = line.split("\t")
        if parts[0] == "full" and len(parts) == 3:
            ends.append(("", parts[1]))
        elif parts[0] == "incremental" and len(parts) == 4:
            ends.append((parts[1], parts[2]))
    if len(ends) != 1:
        raise Refused("the resume token's send is not one full or incremental stream")
    base, snapshot = ends[0]
    _version(root, snapshot, "@")
    if base:
        _version(root, base, "@#")
    if "savedok" in fields:
        raise Refused("a saved partial receive is not sent from here")
    return snapshot


def pump(command, idle, out=1):
    """command's stdout into out (os.splice: the bytes never pass through Python) until it ends; when out takes
    nothing for idle seconds (the link is gone), the command is stopped and the send ends here."""
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env={**os.environ, **ENV})
    src = child.stdout.fileno()
    try:
        while True:
            _, writable, _ = select.select([], [out], [], idle)
            if not writable:
                print(f"tarn-serve: nothing was taken for {idle} s; the send is stopped", file=sys.stderr)
                child.kill()
                break
            if os.splice(src, out, CHUNK) == 0:
                break
    except OSError:
        child.kill()  # the channel closed (or failed): the receiving side went away
    finally:
        child.stdout.close()
    return child.wait()


def main(argv, environ, dry_run=None):
    """(argv to run and its idle limit, or None for hello) for a request; Refused with the reason. A resume's token
    is checked from its dry run (dry_run(token) → zfs send -nvP -t's stdout)."""
    if len(argv) != 3 or not _PAIR.fullmatch(argv[1]):
        raise Refused("usage: tarn-serve <pair> <source root>")
    root = _dataset(argv[2])
    text = environ.get("SSH_ORIGINAL_COMMAND", "")
    if len(text) > MAX_REQUEST:
        raise Refused("the request is too long")
    try:
        request = json.loads(text)
    except ValueError:
        raise Refused("the request is not JSON") from None
    if request == {"verb": "hello"}:
        return None
    command = send_argv(root, request)
    if command[3:4] == ["-t"]:
        check_token(root, (dry_run or _dry_run)(command[4]))
    return command, request.get("idle", IDLE)


class DryRunFailed(Exception):
    def __init__(self, code, words):
        super().__init__(words)
        self.code = code


def _dry_run(token):
    dry = subprocess.run(
        ["zfs", "send", "-n", "-v", "-P", "-w", "-t", token], capture_output=True, text=True, env=ENV, timeout=300
    )
    if dry.returncode:
        raise DryRunFailed(dry.returncode, dry.stderr)  # a stale token: ZFS's own words, for Tarn to read
    return dry.stdout


if __name__ == "__main__":
    try:
        asked = main(sys.argv, os.environ)
    except Refused as refused:
        print(f"tarn-serve: refused: {refused}", file=sys.stderr)
        sys.exit(3)
    except DryRunFailed as failed:
        sys.stderr.write(str(failed))
        sys.exit(failed.code)
    if asked is None:
        print(f"tarn-serve {sys.argv[1]} {sys.argv[2]}")
        sys.exit(0)
    sys.exit(pump(*asked))
