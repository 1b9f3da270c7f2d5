"""A Debian repository served from this machine to the lab guest (QEMU's user network reaches this machine's
127.0.0.1 as 10.0.2.2), with packages built for the test by dpkg-deb and indexed by apt-ftparchive, so the guest's
apt behaves as it does with Debian's mirror: a newer kernel (its image, and the metapackage that pulls it in, as a
point release brings them) and a tool in two versions. Nothing here runs in the guest."""

import functools
import http.server
import shutil
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import require

KERNEL = "6.1.0-99-amd64"  # newer than any bookworm kernel the guest can have
KERNEL_VERSION = "6.1.999-1"
TOOL = "tarn-test-tool"


def _package(folder: Path, name: str, version: str, arch: str, *, depends: str = "", files=None, postinst: str = ""):
    root = folder / f"{name}_{version}"
    (root / "DEBIAN").mkdir(parents=True)
    control = [
        f"Package: {name}",
        f"Version: {version}",
        f"Architecture: {arch}",
        "Maintainer: Tarn tests <tests@tarn.invalid>",
        "Section: misc",
        "Priority: optional",
        *([f"Depends: {depends}"] if depends else []),
        f"Description: {name} built for Tarn's update tests",
    ]
    (root / "DEBIAN" / "control").write_text("\n".join(control) + "\n")
    if postinst:
        (root / "DEBIAN" / "postinst").write_text(postinst)
        (root / "DEBIAN" / "postinst").chmod(0o755)
    for path, text in (files or {}).items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    deb = folder / f"{name}_{version}_{arch}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(deb)], check=True, capture_output=True)
    shutil.rmtree(root)
    return deb


def build(folder: Path) -> Path:
    """The repository's files in folder (flat: `deb [trusted=yes] http://…/ ./`)."""
    for tool in ("dpkg-deb", "apt-ftparchive"):
        require(
            shutil.which(tool) is not None, f"{tool} is missing (scripts/setup.sh test installs dpkg-dev, apt-utils)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for version in ("1.0", "2.0"):
        _package(folder, TOOL, version, "all", files={f"/usr/share/{TOOL}/version": version + "\n"})
    # The kernel's image as Debian's is made: its postinst runs /etc/kernel/postinst.d (initramfs-tools, dkms) for it
    hooks = f"#!/bin/sh\nset -e\nrun-parts --report --exit-on-error --arg={KERNEL} --arg=/boot/vmlinuz-{KERNEL} /etc/kernel/postinst.d\n"  # noqa: E501
    _package(
        folder,
        f"linux-image-{KERNEL}",
        KERNEL_VERSION,
        "amd64",
        files={f"/boot/vmlinuz-{KERNEL}": "not a kernel: held before it is ever installed\n"},
        postinst=hooks,
    )
    _package(folder, "linux-image-amd64", KERNEL_VERSION, "amd64", depends=f"linux-image-{KERNEL}")
    packages = subprocess.run(["apt-ftparchive", "packages", "."], cwd=folder, check=True, capture_output=True)
    (folder / "Packages").write_bytes(packages.stdout)
    # Labelled as a security archive (apt prints it as Tarn-Test-Security:1/tarn-test-security): what Tarn marks
    fields = {"Origin": "Tarn-Test", "Label": "Tarn-Test-Security", "Suite": "tarn-test-security", "Version": "1"}
    options = [f"-oAPT::FTPArchive::Release::{k}={v}" for k, v in fields.items()]
    release = subprocess.run(["apt-ftparchive", *options, "release", "."], cwd=folder, check=True, capture_output=True)
    (folder / "Release").write_bytes(release.stdout)
    return folder


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextmanager
def served(folder: Path):
    """Yields the line for the guest's sources.list.d (this machine as the guest sees it: 10.0.2.2)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"deb [trusted=yes] http://10.0.2.2:{server.server_port}/ ./"
    finally:
        server.shutdown()
