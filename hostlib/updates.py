"""Package updates on a NAS (Debian, OpenZFS from zfs-dkms) and the guard that keeps its pools: what apt would do
(simulated, never guessed from package lists), which of it is a security update, a kernel or ZFS; and, before
anything is installed and again before a reboot is offered, whether every kernel that would boot has a ZFS module
built for it whose version is the userland tools'. A kernel that would not is held (`apt-mark hold`), with the
reason, so the update installs the rest. Never `zpool upgrade`: that is the admin's, on a pool's own page.

What a host prints is parsed here (captured output in tests/fixtures/host/updates/); the commands are argv lists
through the transport, LC_ALL=C."""

import re
from dataclasses import dataclass, field

from hostlib import systemd
from hostlib.errors import CommandFailed, HostError
from hostlib.facts import parse_zfs_version
from hostlib.runner import Transport

# "Inst name [old] (new origin, origin [arch]) []": the old version only for an upgrade, the trailing [] when apt
# lists what it breaks; origins are "Label:version/suite" (Debian-Security:12/oldstable-security).
INST = re.compile(
    r"Inst (?P<name>[a-z0-9][a-z0-9+.-]*(?::[a-z0-9-]+)?)(?: \[(?P<old>[^\]]+)\])? "
    r"\((?P<new>\S+)(?: (?P<origins>.*?))? \[(?P<arch>[a-z0-9-]+)\]\)"
)
REMV = re.compile(r"Remv (?P<name>[a-z0-9][a-z0-9+.-]*(?::[a-z0-9-]+)?)(?: \[(?P<old>[^\]]+)\])?")
KERNEL = re.compile(r"linux-image-(?P<release>[0-9][a-z0-9.+-]*?)(?:-unsigned)?")  # not the metapackage
HEADERS = re.compile(r"linux-headers-(?P<release>[0-9][a-z0-9.+-]*)")
ZFS = re.compile(r"(zfs-dkms|zfsutils-linux|zfs-zed|zfs-initramfs|zfs-dracut|zfs-modules-.*|spl-dkms|spl|"
                 r"lib(zfs|zpool|nvpair|uutil)[0-9]+linux)")  # fmt: skip
KERNEL_META = tuple(
    f"linux-image-{flavour}"
    for flavour in ("amd64", "arm64", "cloud-amd64", "cloud-arm64", "rt-amd64", "rt-arm64", "686-pae", "arm64-16k")
)
KERNELS_MAX = 50  # kernels in /boot Tarn asks about one by one
RELEASE = re.compile(r"[0-9][a-z0-9.+_-]{0,80}")
APT_TIMEOUT = 600.0


@dataclass(frozen=True)
class Pending:
    """One package apt would install or upgrade."""

    name: str
    old: str  # "" when it comes new
    new: str
    origins: tuple[str, ...]
    arch: str

    @property
    def security(self) -> bool:
        return any(o.split(":", 1)[0].endswith("-Security") or o.endswith("-security") for o in self.origins)

    @property
    def kernel(self) -> str:
        """The kernel release this package is the image of (it would boot), or ""."""
        found = KERNEL.fullmatch(self.name)
        return found["release"] if found and not self.name.endswith("-dbg") else ""

    @property
    def zfs(self) -> bool:
        return bool(ZFS.fullmatch(self.name))


@dataclass(frozen=True)
class Simulation:
    pending: tuple[Pending, ...]
    removed: tuple[str, ...]

    @property
    def kernels(self) -> list[str]:
        """The kernels the update would install (each would boot)."""
        return [p.kernel for p in self.pending if p.kernel]

    def get(self, name: str) -> Pending | None:
        return next((p for p in self.pending if p.name == name), None)


def parse_simulation(text: str) -> Simulation:
    """`apt-get -s full-upgrade`: its Inst and Remv lines (Conf lines repeat the Inst ones)."""
    pending, removed = [], []
    for line in text.splitlines():
        if line.startswith("Inst "):
            found = INST.match(line)
            if found is None:
                raise ValueError(f"apt printed an Inst line Tarn cannot read: {line[:200]}")
            origins = tuple(o.strip() for o in (found["origins"] or "").split(",") if o.strip())
            pending.append(Pending(found["name"], found["old"] or "", found["new"], origins, found["arch"]))
        elif line.startswith("Remv "):
            found = REMV.match(line)
            if found:
                removed.append(found["name"])
    return Simulation(tuple(pending), tuple(removed))


def upstream(version: str) -> str:
    """The upstream part of a Debian version (2.3.2 of 2.3.2-2~bpo12+2; an epoch dropped): what the module's and the
    tools' ABI follow (a Debian revision only repackages)."""
    version = version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


def parse_dkms_status(text: str) -> dict[str, dict[str, str]]:
    """`dkms status zfs`: {module version: {kernel release: state}} ("zfs/2.3.2, 6.1.0-56-amd64, x86_64: installed";
    dkms 2's "zfs, 2.3.2, …" too); a version only added (no kernel) has {}."""
    found: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        head, _, state = line.partition(": ")
        parts = [p.strip() for p in head.replace("/", ", ", 1).split(",")]
        if len(parts) < 2 or parts[0] != "zfs":
            continue
        kernels = found.setdefault(parts[1], {})
        if len(parts) >= 3:
            kernels[parts[2]] = state.strip().split(" ")[0]
    return found


@dataclass(frozen=True)
class Verdict:
    """What the guard says of one kernel that would boot."""

    release: str
    module: str  # the zfs module's version built for it ("" for none), or what DKMS will build
    ok: bool
    why: str


@dataclass(frozen=True)
class Guard:
    userland: str  # the zfs tools' version after the update
    verdicts: tuple[Verdict, ...]
    hold: tuple[str, ...] = field(default=())  # packages to hold so that no kernel without its module comes

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)


def guard_before(
    *,
    simulation: Simulation,
    userland: str,
    installed_kernels: list[str],
    modules: dict[str, str],
    dkms_sources: set[str],
    headers: set[str],
) -> Guard:
    """Before anything is installed. userland: the zfs tools' version now; modules: {kernel: zfs module version} for
    the kernels installed; dkms_sources: the zfs versions DKMS has the source of (/usr/src/zfs-<v>); headers: the
    kernels whose headers are installed. After the update the tools are the upgrade's version; each kernel that would
    boot must then have a module of that version: built already (kept only if the tools stay), or built by DKMS at
    install (its source of that version present or coming with zfs-dkms, and the kernel's headers there or
    coming)."""
    tools = simulation.get("zfsutils-linux")
    after = tools.new if tools else userland
    dkms = simulation.get("zfs-dkms")
    if not after:  # no ZFS tools on this host: no pool to keep, nothing to hold
        return Guard("", ())
    if dkms and upstream(dkms.new) != upstream(after):
        why = f"zfs-dkms would build zfs {upstream(dkms.new)} while the tools would be {after}"
        zfs = tuple(p.name for p in simulation.pending if p.zfs)
        return Guard(after, tuple(Verdict(k, modules.get(k, ""), False, why) for k in sorted(installed_kernels)), zfs)
    sources = {upstream(v) for v in dkms_sources} | ({upstream(dkms.new)} if dkms else set())
    coming_headers = {m["release"] for p in simulation.pending if (m := HEADERS.fullmatch(p.name))}
    verdicts, hold = [], []
    for release in sorted(set(installed_kernels) | set(simulation.kernels)):
        built = modules.get(release, "")
        if built and upstream(built) == upstream(after):
            verdicts.append(Verdict(release, built, True, f"zfs {built} is built for it"))
            continue
        if upstream(after) in sources and (release in headers or release in coming_headers):
            verdicts.append(Verdict(release, after, True, f"DKMS builds zfs {upstream(after)} for it at install"))
            continue
        if built:
            why = f"its zfs module is {built}, the tools would be {after}, and DKMS cannot build {upstream(after)}"
        elif upstream(after) not in sources:
            why = f"no zfs module is built for it and DKMS has no zfs {upstream(after)} source to build one"
        else:
            why = f"no zfs module is built for it and its headers (linux-headers-{release}) are not installed"
        new = release in simulation.kernels
        verdicts.append(Verdict(release, built, False, why))
        if new:
            hold += [p.name for p in simulation.pending if p.kernel == release or p.name in KERNEL_META]
        elif tools and upstream(tools.new) != upstream(userland):
            hold += [p.name for p in simulation.pending if p.zfs]  # the tools stay at the modules' version
    return Guard(after, tuple(verdicts), tuple(dict.fromkeys(hold)))


def guard_after(*, userland: str, kernels: list[str], modules: dict[str, str]) -> Guard:
    """Before a reboot is offered: each kernel in /boot has a zfs module of the tools' version (none found in /boot:
    no reboot offered either)."""
    if not userland:
        return Guard("", ())
    if not kernels:
        return Guard(userland, (Verdict("(none)", "", False, "no kernel found in /boot"),))
    verdicts = []
    for release in sorted(kernels):
        built = modules.get(release, "")
        if built and upstream(built) == upstream(userland):
            verdicts.append(Verdict(release, built, True, f"zfs {built} is built for it"))
        elif built:
            verdicts.append(Verdict(release, built, False, f"its zfs module is {built}, the tools are {userland}"))
        else:
            verdicts.append(Verdict(release, "", False, "it has no zfs module: booted, no pool would import"))
    return Guard(userland, tuple(verdicts))


# --- what the host says ---------------------------------------------------------------------------------------


def simulate(t: Transport) -> Simulation:
    """What `apt-get full-upgrade` would do now (from the package lists the host has: refresh them first)."""
    done = t.run(["apt-get", "-s", "-o", "Debug::NoLocking=1", "full-upgrade"], timeout=120, max_output=4 << 20)
    return parse_simulation(done.stdout)


def boot_kernels(t: Transport) -> list[str]:
    """The kernel releases in /boot (vmlinuz-<release>): each may boot."""
    done = t.run(["find", "-P", "/boot", "-maxdepth", "1", "-name", "vmlinuz-*", "-printf", "%f\\n"], check=False)
    out = []
    for name in done.stdout.split():
        release = name.removeprefix("vmlinuz-")
        if not RELEASE.fullmatch(release):
            raise ValueError(f"/boot holds {name[:100]!r}: not a kernel release Tarn can ask about")
        out.append(release)
    if len(out) > KERNELS_MAX:
        raise ValueError(f"/boot holds {len(out)} kernels: at most {KERNELS_MAX} are asked about; remove old ones")
    return out


def module_version(t: Transport, release: str) -> str:
    """The zfs module's version built for that kernel, or "" (modinfo finds none)."""
    if not RELEASE.fullmatch(release):
        raise ValueError(f"not a kernel release: {release[:80]}")
    done = t.run(["modinfo", "-k", release, "-F", "version", "--", "zfs"], check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def userland_version(t: Transport) -> str:
    user, _ = parse_zfs_version(t.run(["zfs", "version"], check=False).stdout)
    return user


def dkms_sources(t: Transport) -> set[str]:
    """The zfs versions DKMS has a source tree of (/usr/src/zfs-<version>/dkms.conf): what it can build."""
    done = t.run(["find", "-P", "/usr/src", "-maxdepth", "2", "-path", "/usr/src/zfs-*/dkms.conf"], check=False)
    return {m[1] for m in re.finditer(r"/usr/src/zfs-([0-9][a-z0-9.+~-]*)/dkms\.conf", done.stdout)}


def header_kernels(t: Transport) -> set[str]:
    done = t.run(
        ["find", "-P", "/usr/src", "-maxdepth", "1", "-name", "linux-headers-*", "-printf", "%f\\n"], check=False
    )
    return {m["release"] for name in done.stdout.split() if (m := HEADERS.fullmatch(name))}


def held(t: Transport) -> list[str]:
    return t.run(["apt-mark", "showhold"], check=False).stdout.split()


def hold(t: Transport, packages: list[str]) -> None:
    if packages:
        bad = [p for p in packages if not re.fullmatch(r"[a-z0-9][a-z0-9+.-]{0,100}", p)]
        if bad:
            raise ValueError(f"not package names: {bad[:3]}")
        t.run(["apt-mark", "hold", "--", *packages], mutating=True)


def dpkg_interrupted(t: Transport) -> bool:
    """`dpkg --audit` names packages left half-installed or unconfigured (an update cut short)."""
    try:
        done = t.run(["dpkg", "--audit"], check=False)
    except CommandFailed:
        return False
    return bool(done.stdout.strip())


def reboot_required(t: Transport) -> bool:
    """Debian's flag: a package asked for a reboot (/run/reboot-required)."""
    done = t.run(["find", "-P", "/run", "-maxdepth", "1", "-name", "reboot-required"], check=False)
    return bool(done.stdout.strip())


@dataclass(frozen=True)
class Facts:
    """What the guard needs of a host, and what the page shows."""

    simulation: Simulation
    userland: str
    kernels: list[str]  # in /boot
    modules: dict[str, str]  # kernel → its zfs module's version
    sources: set[str]  # zfs versions DKMS can build
    headers: set[str]  # kernels whose headers are installed
    held: list[str]
    interrupted: bool
    reboot: bool

    def guard(self) -> Guard:
        return guard_before(
            simulation=self.simulation,
            userland=self.userland,
            installed_kernels=self.kernels,
            modules=self.modules,
            dkms_sources=self.sources,
            headers=self.headers,
        )

    def guard_now(self) -> Guard:
        return guard_after(userland=self.userland, kernels=self.kernels, modules=self.modules)


def read_facts(t: Transport) -> Facts:
    kernels = boot_kernels(t)
    return Facts(
        simulation=simulate(t),
        userland=userland_version(t),
        kernels=kernels,
        modules={k: module_version(t, k) for k in kernels},
        sources=dkms_sources(t),
        headers=header_kernels(t),
        held=held(t),
        interrupted=dpkg_interrupted(t),
        reboot=reboot_required(t),
    )


def refresh_lists(t: Transport) -> None:
    """`apt-get update`: the package lists from the host's sources (what the simulation reads)."""
    t.run(["apt-get", "update", "-q"], mutating=True, timeout=300)


# The update itself runs on the host as a unit of its own (it outlives the worker and the SSH link: a dpkg cut in the
# middle is what this avoids), its output in /var/log/tarn-<what>-<operation>.log, kept.
NONINTERACTIVE = {"DEBIAN_FRONTEND": "noninteractive", "APT_LISTCHANGES_FRONTEND": "none", "LC_ALL": "C"}
UPGRADE = [
    "apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300", "-o", "Dpkg::Options::=--force-confdef",
    "-o", "Dpkg::Options::=--force-confold", "full-upgrade",
]  # fmt: skip
REPAIR = ["dpkg", "--configure", "-a"]
UNIT_GLOBS = ("tarn-updates-*", "tarn-repair-*")
LOG_TAIL = 1 << 20  # bytes of a unit's log read back (the whole file stays on the host)


def unit_name(what: str, operation: int, tag: int) -> str:
    """tarn-<what>-<operation>-<tag>: the tag (random) keeps apart two Tarns, or one restored from a backup, whose
    operation numbers meet on the same NAS."""
    return f"tarn-{what}-{int(operation)}-{int(tag)}"


def log_path(unit: str) -> str:
    return f"/var/log/{unit}.log"


def unit_start(t: Transport, what: str, unit: str) -> str:
    """Start the upgrade ("updates") or dpkg's repair ("repair") as the unit; returns its log's path (a new file)."""
    argv = {"updates": UPGRADE, "repair": REPAIR}[what]
    log = log_path(unit)
    systemd.start(
        t,
        unit,
        argv,
        description=f"Tarn: {' '.join(argv[:3])}",
        env=NONINTERACTIVE,
        log=log,
        keep=True,
    )
    return log


def units_active(t: Transport) -> list[str]:
    """Tarn's update or repair units still running on the host (a worker lost while one ran leaves it going)."""
    argv = ["systemctl", "list-units", "--no-legend", "--plain", "--state=active", "--", *UNIT_GLOBS]
    done = t.run(argv, check=False, timeout=30)
    return [line.split()[0].removesuffix(".service") for line in done.stdout.splitlines() if line.strip()]


def unit_state(t: Transport, unit: str) -> str:
    """running, succeeded, failed, or unknown (systemd did not say: ask again). The unit stays loaded once done
    (RemainAfterExit), so a success is seen as one, never taken from a unit that is simply gone."""
    values = systemd.show(t, unit, "LoadState", "ActiveState", "SubState", "Result")
    if values is None or values.get("LoadState") != "loaded":
        return "unknown"
    active, sub, result = values.get("ActiveState"), values.get("SubState"), values.get("Result")
    if active == "failed" or (active == "active" and sub == "exited" and result != "success"):
        return "failed"
    if active == "active" and sub == "exited" and result == "success":
        return "succeeded"
    if active in ("activating", "active", "deactivating", "reloading"):
        return "running"
    return "unknown"  # inactive without a result: not started yet, or stopped by someone


def unit_forget(t: Transport, unit: str) -> None:
    """Unload a finished unit (its log stays)."""
    systemd.stop(t, unit)
    systemd.reset_failed(t, unit)


def log_read(t: Transport, path: str) -> str:
    """The end of a unit's log (at most LOG_TAIL bytes)."""
    return t.run(["tail", "-c", str(LOG_TAIL), "--", path], check=False, max_output=LOG_TAIL + 4096).stdout


def log_progress(text: str, steps: int) -> int:
    """Percent of the packages unpacked and set up, by apt's own lines."""
    done = sum(line.startswith(("Unpacking ", "Setting up ")) for line in text.splitlines())
    return min(99, int(100 * done / max(1, 2 * steps)))


# --- the reboot, and what came back -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Storage:
    """What a host's ZFS shows: its imported pools, and the encryption roots whose key is not loaded."""

    pools: tuple[str, ...]
    locked: tuple[str, ...]


def parse_storage(pools: str, datasets: str) -> Storage:
    """`zpool list -H -o name` and `zfs list -H -o name,encryptionroot,keystatus`."""
    locked = []
    for line in datasets.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == parts[1] and parts[2] == "unavailable":
            locked.append(parts[0])
    return Storage(tuple(pools.split()), tuple(locked))


def storage(t: Transport) -> Storage:
    pools = t.run(["zpool", "list", "-H", "-o", "name"], check=False).stdout
    datasets = t.run(
        ["zfs", "list", "-H", "-t", "filesystem,volume", "-o", "name,encryptionroot,keystatus"],
        check=False,
        max_output=16 << 20,
    ).stdout
    return parse_storage(pools, datasets)


def reboot(t: Transport) -> None:
    """`systemctl reboot`: the connection may drop before it answers (that is the reboot, not a failure)."""
    try:
        t.run(["systemctl", "reboot"], mutating=True, timeout=30, check=False)
    except HostError:
        pass


def boot_id(t: Transport) -> str:
    """The kernel's id of this boot (a new one after a reboot)."""
    return t.read_file("/proc/sys/kernel/random/boot_id").strip()


def running_kernel(t: Transport) -> str:
    return t.run(["uname", "-r"]).stdout.strip()
