"""tarn-serve: the only thing a pull pair's key may do on the sending NAS.

A pull pair turns the connection round: the receiving NAS holds the key and dials the sender, so the sender holds
nothing that can reach the copies (a sender taken over cannot delete its backups). Installed root-owned at
SERVE_PATH and named in the key's authorized_keys line as its forced command:

    restrict,from="<receiver's address>",command="/usr/bin/python3 <SERVE_PATH> <pair> <source root>" ssh-ed25519 …

so whatever the receiver's ssh asks for, sshd runs this instead and hands the request over in SSH_ORIGINAL_COMMAND.
That text is read as data (one JSON object), never run by a shell: the argv it names must be one of the three
shapes Tarn's sends take, of the source root or below it, and is then run as it is (zfs send writes straight into
the channel; the bytes never pass through Python).

Requests: {"verb": "hello"} (Tarn's check of a new pair: answers "tarn-serve <pair> <root>"),
          {"verb": "send", "argv": ["zfs", "send", "-w", "--", "<root>[/…]@<snap>"]}
          {"verb": "send", "argv": ["zfs", "send", "-w", "-i" | "-I", "<same dataset>@<snap> | #<bookmark>", "--", …]}
          {"verb": "send", "argv": ["zfs", "send", "-t", "<resume token>"]} (the token's own snapshot, read with
          `zfs send -nvP -t`, must lie below the root too)

Self-contained (standard library only): Tarn writes this file's source to the NAS.
"""

import json
import os
import re
import subprocess
import sys

SERVE_PATH = "/usr/local/lib/tarn/tarn-serve"
_COMPONENT = re.compile(r"[A-Za-z0-9_.:-]{1,255}")
_PAIR = re.compile(r"[0-9]{1,12}")
_TOKEN = re.compile(r"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+-[0-9a-f]+")
MAX_REQUEST = 65536  # a resume token runs to a few kilobytes
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
    if set(request) != {"verb", "argv"}:
        raise Refused("a send request has a verb and an argv, nothing else")
    argv = request["argv"]
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or argv[:2] != ["zfs", "send"]:
        raise Refused("the argv is a zfs send")
    rest = argv[2:]
    if len(rest) == 2 and rest[0] == "-t":
        if not _TOKEN.fullmatch(rest[1]):
            raise Refused("a resume token is four groups of hex digits joined by '-'")
        return argv  # its snapshot is checked against the root once read from it (token_target)
    if len(rest) == 3 and rest[:2] == ["-w", "--"]:
        _version(root, rest[2], "@")
        return argv
    if len(rest) == 5 and rest[0] == "-w" and rest[1] in ("-i", "-I") and rest[3] == "--":
        dataset, _ = _version(root, rest[4], "@")
        base, mark = _version(root, rest[2], "@#" if rest[1] == "-i" else "@")
        if base != dataset:
            raise Refused("an incremental's base is a snapshot or bookmark of the same dataset")
        return argv
    raise Refused("not one of the sends Tarn makes (-w full, -w -i/-I incremental, -t resume)")


def token_target(text):
    """The snapshot a resume token leads to, from `zfs send -nvP -t <token>` (its `\\ttoname = …` line)."""
    for line in text.splitlines():
        key, _, value = line.strip().partition(" = ")
        if key == "toname":
            return value
    raise Refused("the resume token names no snapshot")


def main(argv, environ):
    """(argv to run, or None for hello) for a request; Refused with the reason."""
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
    return send_argv(root, request)


if __name__ == "__main__":
    try:
        command = main(sys.argv, os.environ)
        if command is not None and command[2] == "-t":
            dry = subprocess.run(
                ["zfs", "send", "-n", "-v", "-P", "-t", command[3]],
                capture_output=True,
                text=True,
                env=ENV,
                timeout=300,
            )
            if dry.returncode:
                sys.stderr.write(dry.stderr)
                sys.exit(dry.returncode)
            _version(sys.argv[2], token_target(dry.stdout), "@")
    except Refused as refused:
        print(f"tarn-serve: refused: {refused}", file=sys.stderr)
        sys.exit(3)
    if command is None:
        print(f"tarn-serve {sys.argv[1]} {sys.argv[2]}")
        sys.exit(0)
    os.execvpe(command[0], command, {**os.environ, **ENV})
