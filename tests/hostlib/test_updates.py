"""Issue 41, item 4: what apt would do, read from its simulation (output captured on a Debian 12 machine), and the
guard's verdicts: every kernel that would boot has a zfs module of the tools' version (built, or built by DKMS at
install), else the kernel is held and the reason said."""

from pathlib import Path

import pytest

from hostlib import updates
from hostlib.updates import Pending, Simulation, guard_after, guard_before, parse_dkms_status, upstream

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "updates"
ZFS = "2.3.2-2~bpo12+2"  # the lab guest's (tests/fixtures/host/zfs_version.txt)
NOW_KERNEL = "6.1.0-56-amd64"  # the lab guest's
NEW_KERNEL = "6.1.0-57-amd64"  # in apt_install_kernel.txt


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_every_inst_line_of_a_full_upgrade_is_read_with_its_origins():
    text = _read("apt_full_upgrade.txt")
    found = updates.parse_simulation(text)
    assert len(found.pending) == sum(line.startswith("Inst ") for line in text.splitlines()) == 140
    bash = found.get("bash")
    assert (bash.old, bash.new, bash.origins, bash.arch) == (
        "5.2.15-2+b8",
        "5.2.15-2+b13",
        ("Debian:12.15/oldstable",),
        "amd64",
    )
    assert not bash.security and not bash.kernel and not bash.zfs
    both = found.get("libgcrypt20")
    assert both.origins == ("Debian:12.15/oldstable", "Debian-Security:12/oldstable-security") and both.security
    assert found.get("liblzma-dev").security, "Inst line that ends with [] (what it breaks)"
    assert sum(p.security for p in found.pending) == 90
    assert found.kernels == [] and found.removed == ()


def test_a_new_kernel_and_its_headers_are_seen_as_such():
    found = updates.parse_simulation(_read("apt_install_kernel.txt"))
    assert found.kernels == [NEW_KERNEL]
    image = found.get(f"linux-image-{NEW_KERNEL}")
    assert image.old == "" and image.new == "6.1.192-3" and image.security
    assert found.get("linux-image-amd64").kernel == "", "the metapackage boots nothing itself"
    assert found.get(f"linux-headers-{NEW_KERNEL}") is not None


def test_an_inst_line_tarn_cannot_read_is_said_not_skipped():
    with pytest.raises(ValueError, match="cannot read"):
        updates.parse_simulation("Inst bash 5.2 whatever\n")


@pytest.mark.parametrize(
    "name, release",
    [
        ("linux-image-6.1.0-57-amd64", "6.1.0-57-amd64"),
        ("linux-image-6.1.0-57-amd64-unsigned", "6.1.0-57-amd64"),
        ("linux-image-6.1.0-57-amd64-dbg", ""),
        ("linux-image-amd64", ""),
        ("linux-headers-6.1.0-57-amd64", ""),
    ],
)
def test_which_packages_are_kernels_that_boot(name, release):
    assert Pending(name, "", "1", (), "amd64").kernel == release


def test_zfs_packages_are_flagged():
    for name in ("zfs-dkms", "zfsutils-linux", "libzfs6linux", "libzpool6linux", "zfs-zed", "libnvpair3linux"):
        assert Pending(name, "1", "2", (), "amd64").zfs, name
    assert not Pending("zfsnap", "1", "2", (), "all").zfs


def test_upstream_versions():
    assert upstream("2.3.2-2~bpo12+2") == "2.3.2" and upstream("1:2.3.3-1") == "2.3.3" and upstream("2.3.2") == "2.3.2"


def test_dkms_status_both_formats():
    text = (
        "zfs/2.3.2, 6.1.0-56-amd64, x86_64: installed\nzfs/2.3.3: added\nother/1.0, 6.1.0-56-amd64, x86_64: installed\n"
    )
    assert parse_dkms_status(text) == {"2.3.2": {NOW_KERNEL: "installed"}, "2.3.3": {}}
    assert parse_dkms_status("zfs, 2.1.11, 6.1.0-56-amd64, x86_64: installed (WARNING Differences)") == {
        "2.1.11": {NOW_KERNEL: "installed"}
    }


def _kernel_update() -> Simulation:
    return updates.parse_simulation(_read("apt_install_kernel.txt"))


def test_a_new_kernel_dkms_cannot_build_for_is_held_with_the_metapackage_and_the_reason():
    """The lab guest's case: zfs built for 6.1.0-56 by DKMS, whose source was removed after the build."""
    guard = guard_before(
        simulation=_kernel_update(),
        userland=ZFS,
        installed_kernels=[NOW_KERNEL],
        modules={NOW_KERNEL: ZFS},
        dkms_sources=set(),
        headers={NOW_KERNEL},
    )
    assert not guard.ok
    now, new = guard.verdicts
    assert now.ok and now.release == NOW_KERNEL
    assert not new.ok and new.release == NEW_KERNEL
    assert new.why == "no zfs module is built for it and DKMS has no zfs 2.3.2 source to build one"
    assert guard.hold == (f"linux-image-{NEW_KERNEL}", "linux-image-amd64")


def test_with_the_source_and_the_headers_coming_dkms_builds_it_at_install():
    guard = guard_before(
        simulation=_kernel_update(),
        userland=ZFS,
        installed_kernels=[NOW_KERNEL],
        modules={NOW_KERNEL: ZFS},
        dkms_sources={ZFS},
        headers={NOW_KERNEL},
    )
    assert guard.ok and guard.hold == ()
    assert guard.verdicts[1].why == "DKMS builds zfs 2.3.2 for it at install"


def test_without_the_new_kernels_headers_dkms_cannot_build():
    sim = _kernel_update()
    without = Simulation(tuple(p for p in sim.pending if not p.name.startswith("linux-headers-")), ())
    guard = guard_before(
        simulation=without,
        userland=ZFS,
        installed_kernels=[NOW_KERNEL],
        modules={NOW_KERNEL: ZFS},
        dkms_sources={ZFS},
        headers={NOW_KERNEL},
    )
    assert not guard.ok and "its headers (linux-headers-6.1.0-57-amd64) are not installed" in guard.verdicts[1].why


def test_new_zfs_tools_without_a_module_to_match_hold_every_zfs_package():
    tools = Pending(
        "zfsutils-linux", ZFS, "2.3.3-1~bpo12+1", ("Debian Backports:12-backports/oldstable-backports",), "amd64"
    )
    lib = Pending("libzfs6linux", ZFS, "2.3.3-1~bpo12+1", tools.origins, "amd64")
    guard = guard_before(
        simulation=Simulation((tools, lib), ()),
        userland=ZFS,
        installed_kernels=[NOW_KERNEL],
        modules={NOW_KERNEL: ZFS},
        dkms_sources={ZFS},
        headers={NOW_KERNEL},
    )
    assert not guard.ok and guard.userland == "2.3.3-1~bpo12+1"
    assert guard.verdicts[0].why.startswith("its zfs module is 2.3.2-2~bpo12+2, the tools would be 2.3.3-1~bpo12+1")
    assert guard.hold == ("zfsutils-linux", "libzfs6linux")


def test_after_the_update_a_kernel_without_its_module_means_no_reboot_is_offered():
    guard = guard_after(
        userland=ZFS,
        kernels=[NOW_KERNEL, NEW_KERNEL, "6.1.0-55-amd64"],
        modules={NOW_KERNEL: ZFS, "6.1.0-55-amd64": "2.3.1-1"},
    )
    assert not guard.ok
    by = {v.release: v for v in guard.verdicts}
    assert by[NOW_KERNEL].ok
    assert by[NEW_KERNEL].why == "it has no zfs module: booted, no pool would import"
    assert by["6.1.0-55-amd64"].why == "its zfs module is 2.3.1-1, the tools are 2.3.2-2~bpo12+2"


def test_an_inst_line_without_an_origin_is_read_too():
    found = updates.parse_simulation("Inst tool [1.0] (2.0 [all])\n")
    assert found.pending[0].origins == () and found.pending[0].new == "2.0" and not found.pending[0].security


def test_a_foreign_architectures_package_is_read_with_its_architecture():
    found = updates.parse_simulation("Inst libc6:i386 [2.36-9] (2.36-9+deb12u10 Debian:12.15/oldstable [i386])\n")
    assert found.pending[0].name == "libc6:i386" and found.pending[0].arch == "i386"


def test_a_host_without_zfs_has_nothing_for_the_guard_to_keep():
    guard = guard_before(
        simulation=_kernel_update(),
        userland="",
        installed_kernels=[NOW_KERNEL],
        modules={},
        dkms_sources=set(),
        headers=set(),
    )
    assert guard.ok and guard.hold == () and guard.verdicts == ()
    assert guard_after(userland="", kernels=[NOW_KERNEL], modules={}).ok


def test_zfs_dkms_building_another_version_than_the_tools_holds_zfs():
    dkms = Pending("zfs-dkms", ZFS, "2.3.4-1~bpo12+1", (), "all")
    guard = guard_before(
        simulation=Simulation((dkms,), ()),
        userland=ZFS,
        installed_kernels=[NOW_KERNEL],
        modules={NOW_KERNEL: ZFS},
        dkms_sources={ZFS},
        headers={NOW_KERNEL},
    )
    assert not guard.ok and guard.hold == ("zfs-dkms",)
    assert guard.verdicts[0].why == "zfs-dkms would build zfs 2.3.4 while the tools would be 2.3.2-2~bpo12+2"


def test_no_kernel_in_boot_offers_no_reboot():
    guard = guard_after(userland=ZFS, kernels=[], modules={})
    assert not guard.ok and guard.verdicts[0].why == "no kernel found in /boot"


@pytest.mark.parametrize(
    "shown, state",
    [
        ("LoadState=loaded\nActiveState=active\nSubState=running\nResult=success\n", "running"),
        ("LoadState=loaded\nActiveState=active\nSubState=exited\nResult=success\n", "succeeded"),
        ("LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\n", "failed"),
        ("LoadState=not-found\nActiveState=inactive\nSubState=dead\nResult=success\n", "unknown"),
        ("", "unknown"),
    ],
)
def test_what_systemd_says_of_a_unit(shown, state):
    from tests.support.runners import FakeHost  # noqa: PLC0415

    fake = FakeHost().answer("systemctl", "show", stdout=shown)
    assert updates.unit_state(fake.transport(), "tarn-updates-1-2") == state
