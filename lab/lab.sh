#!/usr/bin/env bash
# The test lab: a QEMU guest with real OpenZFS 2.3, Samba, nfsd, fio and iperf3.
#   lab/lab.sh up       build the image if not cached, then restore a saved booted guest (or boot one)
#   lab/lab.sh reset [STATE]  roll the guest back to its clean state (loadvm), or to a state saved since `up`
#                       (--no-ssh after it: loadvm only, the caller connects and sets the guest's clock)
#   lab/lab.sh save STATE     save the running guest as STATE (savevm, ~1 s): tests restore a pool they need
#                       instead of making it again; every state but clean goes when the guest is started anew
#   lab/lab.sh down     stop it      lab/lab.sh ssh [cmd…]   a shell or a command in the guest
#   lab/lab.sh status   print where it is (lab.env)
#   lab/lab.sh wire     address the guest's replication NIC (TARN_LAB_REP_ADDR; a second guest also takes its own MAC,
#                       TARN_LAB_REP_GUEST_MAC): TARN_LAB=2 make run wires both guests so they can be paired
#   lab/lab.sh nvme on|off  plug the NVMe drive in or out (never saved with a state: QEMU cannot migrate it)
#   lab/lab.sh prepare  only build the image and the saved guest (make test runs it in the background while
#                       the unit tier runs); `up` waits for a prepare under way (a lock in the cache)
# Environment: TARN_LAB_CACHE (/var/cache/tarn-lab), TARN_LAB_RUN (/run/tarn-lab),
#              TARN_LAB_SSH_PORT (2222), TARN_LAB_SMB_PORT (4450), TARN_LAB_DISKS (8), TARN_LAB_MEM (1024),
#              TARN_LAB_NETNS (tarnlab), TARN_LAB_TAP (taplab), TARN_LAB_DATA_NET (10.77.0), TARN_LAB_BOOT_TIMEOUT (240),
#              TARN_LAB_DATA_LINKS (1), TARN_LAB_REP_PORT (17701), TARN_LAB_REP_PEER_PORT (17702): a second guest
#              (replication) runs with its own RUN, ports, NETNS and TAP, DATA_LINKS=0 and the two REP ports swapped
# The data links: the guest has two data NICs. The first (…:57, 10.77.0.2/24 by the guest's networkd) is wired to
# tap $TAP in this machine's own namespace (10.77.0.1/24), so Tarn's local host can ping and run iperf3 against
# the guest; the second (…:58, no address) to tap ${TAP}1 in the namespace $NETNS (10.77.0.3/24): a client
# behind the guest, reached only when the guest bridges its two data NICs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${TARN_LAB_CACHE:-/var/cache/tarn-lab}
RUN=${TARN_LAB_RUN:-/run/tarn-lab}
SSH_PORT=${TARN_LAB_SSH_PORT:-2222}
SMB_PORT=${TARN_LAB_SMB_PORT:-4450}
DISKS=${TARN_LAB_DISKS:-8}
MEM=${TARN_LAB_MEM:-1024}
DISK_SIZE=4G
# Disks with real SMART beside the virtio ones (which have none): two SATA disks on the q35's own AHCI controller
# (ATA SMART attributes, self-test log, self-tests) and an NVMe drive's backing file. QEMU cannot migrate an NVMe
# controller, and the saved guests are migrations: the NVMe is plugged in at run time into its own PCIe slot
# (`lab.sh nvme on|off`; its health log's critical warning is set through the monitor), never saved with a state.
SMART_DISKS="sata1 sata2 nvme1"
SMART_SIZE=2G
NETNS=${TARN_LAB_NETNS:-tarnlab}
TAP=${TARN_LAB_TAP:-taplab}
TAP1=${TAP}1
NET=${TARN_LAB_DATA_NET:-10.77.0}
PEER_ADDR=$NET.1/24
GUEST_DATA_ADDR=$NET.2/24
NS_ADDR=$NET.3/24
DATA_MAC=52:54:00:12:34:57
DATA1_MAC=52:54:00:12:34:58
# 0: the data NICs' taps both go into the namespace $NETNS, unaddressed (a second guest beside the first, for
# replication: its peer address would clash with the first's in this machine's namespace).
DATA_LINKS=${TARN_LAB_DATA_LINKS:-1}
# The replication link: a fourth NIC, a wire (UDP datagrams between the two QEMUs) to the guest whose ports mirror
# these. Nothing on this machine's network sees it; `set_link rep0 off` on either monitor cuts it.
REP_PORT=${TARN_LAB_REP_PORT:-17701}
REP_PEER_PORT=${TARN_LAB_REP_PEER_PORT:-17702}
REP_MAC=52:54:00:12:34:59
REP_ADDR=${TARN_LAB_REP_ADDR:-10.78.0.1/24}
REP_GUEST_MAC=${TARN_LAB_REP_GUEST_MAC:-$REP_MAC}
BOOT_TIMEOUT=${TARN_LAB_BOOT_TIMEOUT:-240}

die() { echo "lab: $*" >&2; exit 1; }
partial=""  # a cache entry being made; removed if we exit before it is finished
trap '[ -z "$partial" ] || rm -rf "$partial"' EXIT
say() { printf '[lab %5.1fs] %s\n' "$(elapsed)" "$*"; }
t0=$(date +%s.%N)
elapsed() { echo "$(date +%s.%N) - $t0" | bc; }
hmp() { python3 "$here/hmp.py" "$RUN/monitor.sock" "$@"; }

accel() {
  # KVM only where the CPU has real VMX/SVM; /dev/kvm from a PVM hypervisor crawls (see shared/reference/lab.md).
  # Under TCG a Westmere (SSE4.2, AES-NI, PCLMULQDQ, no AVX): QEMU 7.2 emulates AVX/AVX2 slowly, and with `-cpu max`
  # glibc, fio and ZFS's checksums pick them. Measured side by side (lab tests, 2026-11-29): fio profiles 189 -> 97 s,
  # encryption 85 -> 83 s, cold boot 54 -> 42-60 s; AES-NI kept for native encryption's AES-GCM.
  if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then echo "kvm -cpu host"; else echo "tcg,thread=multi,tb-size=512 -cpu Westmere"; fi
}

image_key() { sha256sum "$here/build.sh" | cut -c1-16; }
# The saved state only fits the same QEMU, machine, CPU and device list: all of them are in its key.
golden_key() {
  { image_key; qemu-system-x86_64 --version | head -1; accel; echo "$DISKS $DISK_SIZE $MEM $NET"
    sed -n '/^qemu_args()/,/^}/p;/^guest_config()/,/^}/p' "$0"; } \
    | sha256sum | cut -c1-16
}
IMG() { echo "$CACHE/image-$(image_key)"; }
GOLD() { echo "$CACHE/golden-$(golden_key)"; }

preflight() {
  local missing=()
  for tool in qemu-system-x86_64 qemu-img zstd mmdebstrap ssh bc mkfs.ext4; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  [ ${#missing[@]} -eq 0 ] || die "missing tools: ${missing[*]} (make lab installs them as root)"
  [ -e /dev/net/tun ] || die "no /dev/net/tun: cannot create the data link's tap device"
  local avail_mb
  avail_mb=$(awk '/MemAvailable/ {print int($2/1024)}' /proc/meminfo)
  [ "$avail_mb" -ge $((MEM + 512)) ] || die "not enough memory: ${avail_mb} MiB available, the guest needs $((MEM + 512))"
  mkdir -p "$CACHE"
  local free_gb
  free_gb=$(df -Pk "$CACHE" | awk 'NR==2 {print int($4/1048576)}')
  [ "$free_gb" -ge 8 ] || die "not enough disk: ${free_gb} GiB free under $CACHE, the lab needs 8"
}

qemu_args() {
  # $1: directory with root.qcow2 and disk*.qcow2
  local dir=$1 a
  read -r -a a <<<"$(accel)"
  # norandmaps: no ASLR in the guest. TCG keys its translated code by virtual address (QEMU 7.2 has no PC-relative
  # blocks for x86), so each new process with libraries mapped elsewhere is translated afresh: with it, a guest
  # `zpool list` takes 0.16 s instead of 0.44 s and the storage lab tests 184 s instead of 279 s.
  printf '%s\n' -name tarnlab -accel "${a[0]}" "${a[@]:1}" -smp 2 -m "$MEM" -machine q35 -display none -nodefaults \
    -chardev "socket,id=ser0,path=$RUN/serial.sock,server=on,wait=off,logfile=$RUN/console.log" -serial chardev:ser0 \
    -monitor "unix:$RUN/monitor.sock,server,nowait" \
    -kernel "$(IMG)/vmlinuz" -initrd "$(IMG)/initrd.img" -append "root=/dev/vda rw console=ttyS0 quiet mitigations=off norandmaps" \
    -drive "file=$dir/root.qcow2,if=none,id=root,format=qcow2,cache=unsafe,discard=unmap" \
    -device "virtio-blk-pci,drive=root,serial=rootdisk,addr=0x3"
  local i
  for i in $(seq 1 "$DISKS"); do
    printf '%s\n' -drive "file=$dir/disk$i.qcow2,if=none,id=d$i,format=qcow2,cache=unsafe,discard=unmap" \
      -device "virtio-blk-pci,drive=d$i,serial=zfsdisk$i,addr=$(printf '0x%x' $((i + 3)))"
  done
  printf '%s\n' -drive "file=$dir/sata1.qcow2,if=none,id=sata1,format=qcow2,cache=unsafe" \
    -device "ide-hd,drive=sata1,bus=ide.0,serial=TARNSATA1,model=TarnLab HDD,rotation_rate=7200" \
    -drive "file=$dir/sata2.qcow2,if=none,id=sata2,format=qcow2,cache=unsafe" \
    -device "ide-hd,drive=sata2,bus=ide.1,serial=TARNSATA2,model=TarnLab SSD,rotation_rate=1" \
    -drive "file=$dir/nvme1.qcow2,if=none,id=nvme1,format=qcow2,cache=unsafe" \
    -device "pcie-root-port,id=nvslot,chassis=1,slot=1,bus=pcie.0,addr=0x1c"
  printf '%s\n' -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$SSH_PORT-:22,hostfwd=tcp:127.0.0.1:$SMB_PORT-:445" \
    -device "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56,addr=0x10" \
    -netdev "tap,id=t0,ifname=$TAP,script=no,downscript=no" \
    -device "virtio-net-pci,netdev=t0,mac=$DATA_MAC,addr=0x11" \
    -netdev "tap,id=t1,ifname=$TAP1,script=no,downscript=no" \
    -device "virtio-net-pci,netdev=t1,mac=$DATA1_MAC,addr=0x12" \
    -netdev "socket,id=rep0,udp=127.0.0.1:$REP_PEER_PORT,localaddr=127.0.0.1:$REP_PORT" \
    -device "virtio-net-pci,netdev=rep0,mac=$REP_MAC,addr=0x13" \
    -daemonize -pidfile "$RUN/qemu.pid"
}

# LAB_CONTROL_PATH: ride a shared connection the caller owns (the lab tests pass Tarn's own, so a restore costs
# one SSH handshake, not two); without one, guest commands connect afresh instead of starting one there.
ssh_opts() {
  printf '%s\n' -i "$(IMG)/id_ed25519" -p "$SSH_PORT" -o BatchMode=yes -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5 -o "ControlPath=${LAB_CONTROL_PATH:-$RUN/cm}"
}
gssh() { local o; mapfile -t o < <(ssh_opts); ssh -o ControlMaster=no "${o[@]}" root@127.0.0.1 "$@"; }
# A shared connection makes guest commands ~0.2 s instead of ~0.8 s under emulation. Its process lives on,
# so it gets /dev/null for stdio: it must never hold a caller's pipe open.
ensure_master() {
  local o; mapfile -t o < <(ssh_opts)
  ssh -O check "${o[@]}" root@127.0.0.1 >/dev/null 2>&1 && return 0
  ssh -M -N -f -o ControlPersist=300 "${o[@]}" root@127.0.0.1 </dev/null >/dev/null 2>&1
}

running() { [ -f "$RUN/qemu.pid" ] && kill -0 "$(cat "$RUN/qemu.pid")" 2>/dev/null; }

del_taps() {
  ip -n "$NETNS" link del "$TAP" 2>/dev/null || true
  ip -n "$NETNS" link del "$TAP1" 2>/dev/null || true
  ip link del "$TAP1" 2>/dev/null || true
  ip link del "$TAP" 2>/dev/null || true
}

make_tap() {
  ip netns add "$NETNS" 2>/dev/null || true
  del_taps
  ip tuntap add dev "$TAP" mode tap
  ip tuntap add dev "$TAP1" mode tap
}

# After QEMU holds the taps: the first stays here (this machine is a peer on the data link), the second goes
# into the lab's namespace (a client behind the guest).
wire_tap() {
  if [ "$DATA_LINKS" = 0 ]; then
    ip link set "$TAP" netns "$NETNS" && ip link set "$TAP1" netns "$NETNS"
    ip -n "$NETNS" link set "$TAP" up && ip -n "$NETNS" link set "$TAP1" up
    return 0
  fi
  ip addr add "$PEER_ADDR" dev "$TAP"
  ip link set "$TAP" up
  ip link set "$TAP1" netns "$NETNS"
  ip -n "$NETNS" link set lo up
  ip -n "$NETNS" addr add "$NS_ADDR" dev "$TAP1"
  ip -n "$NETNS" link set "$TAP1" up
}

# The guest's own network config for its data NICs, as a NAS would have it (networkd, static address), saved
# with the golden state. Tarn's files (05-tarn-*) sort first and take a link over when Tarn changes it.
guest_config() {
  gssh "printf '[Match]\nMACAddress=$DATA_MAC\n\n[Network]\nAddress=$GUEST_DATA_ADDR\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' \
      >/etc/systemd/network/12-lab-data.network
    printf '[Match]\nMACAddress=$DATA1_MAC\n\n[Network]\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' \
      >/etc/systemd/network/13-lab-data1.network
    networkctl reload && for i in \$(seq 100); do ip -4 -o addr | grep -q ' ${GUEST_DATA_ADDR%/*}/' && break; sleep 0.2; done
    ip -4 -o addr | grep -q ' ${GUEST_DATA_ADDR%/*}/'"
}

start_qemu() {
  local dir=$1; shift
  local args
  mapfile -t args < <(qemu_args "$dir")
  rm -f "$RUN/console.log" "$RUN/monitor.sock" "$RUN/serial.sock"
  make_tap
  # fds past stderr closed: a caller that holds a lock on one (flock(1) runs its command with it) must not have
  # it held by the guest for as long as the guest runs
  qemu-system-x86_64 "${args[@]}" "$@" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
  wire_tap
}

wait_ssh() {
  # The first connection that gets in stays as the shared one (a handshake costs ~1 s under emulation). Every
  # caller has stopped the old one; a socket left by one that died would stop a new one from listening.
  local deadline=$(( $(date +%s) + $1 ))
  rm -f "$RUN/cm"
  while [ "$(date +%s)" -lt "$deadline" ]; do
    ensure_master && return 0
    running || break
    sleep 0.3
  done
  echo "lab: the guest did not answer SSH within $1 s; last console lines:" >&2
  tail -n 25 "$RUN/console.log" >&2 2>/dev/null || true
  stop_qemu
  exit 1
}

stop_qemu() {
  if running; then
    hmp quit >/dev/null 2>&1 || kill "$(cat "$RUN/qemu.pid")" 2>/dev/null || true
    for _ in $(seq 50); do running || break; sleep 0.1; done
    running && kill -9 "$(cat "$RUN/qemu.pid")" 2>/dev/null || true
  fi
  ssh -O exit -o "ControlPath=$RUN/cm" x 2>/dev/null || true
  del_taps
  ip netns del "$NETNS" 2>/dev/null || true
  rm -f "$RUN/qemu.pid"
}

wait_migration() {
  local status
  for _ in $(seq 600); do
    status=$(hmp "info migrate" 2>/dev/null | awk -F': ' '/^Migration status/ {print $2}')
    case "$status" in completed) return 0 ;; failed|cancelled) die "migration $status" ;; esac
    sleep 0.2
  done
  die "migration did not complete"
}

ensure_image() {
  if [ ! -d "$(IMG)" ]; then
    say "building the guest image (cold: ~6–10 min; cached afterwards in $(IMG))"
    local s=$SECONDS
    "$here/build.sh" "$(IMG)"
    echo "$((SECONDS - s))" >"$(IMG)/build-seconds"
    say "built in $((SECONDS - s)) s"
  fi
}

# Boot once on golden overlays, then save the booted guest so later runs restore it in seconds.
ensure_golden() {
  [ -f "$(GOLD)/state.zst" ] && return 0
  local g tmp
  g=$(GOLD); tmp="$g.tmp"
  partial=$tmp
  rm -rf "$tmp"; mkdir -p "$tmp" "$RUN"
  qemu-img create -q -f qcow2 -b "$(IMG)/root.raw" -F raw "$tmp/root.qcow2"
  for i in $(seq 1 "$DISKS"); do qemu-img create -q -f qcow2 "$tmp/disk$i.qcow2" "$DISK_SIZE"; done
  for f in $SMART_DISKS; do qemu-img create -q -f qcow2 "$tmp/$f.qcow2" "$SMART_SIZE"; done
  say "cold boot to save a ready guest"
  local s; s=$(elapsed)
  start_qemu "$tmp"
  wait_ssh "$BOOT_TIMEOUT"
  say "cold boot to SSH: $(echo "$(elapsed) - $s" | bc) s"
  echo "$(echo "$(elapsed) - $s" | bc)" >"$tmp/boot-seconds"
  gssh 'systemctl is-system-running --wait >/dev/null 2>&1; zfs version >/dev/null && sync' || true
  guest_config || die "the guest's data link did not come up"
  gssh sync
  hmp stop >/dev/null
  hmp "migrate \"exec:zstd -q -T0 -3 > $tmp/state.zst\"" >/dev/null
  wait_migration
  stop_qemu
  mv "$tmp" "$g"
  partial=""
  say "saved the booted guest in $g"
}

write_env() {
  cat >"$RUN/lab.env" <<ENV
LAB_SSH_HOST=127.0.0.1
LAB_SSH_PORT=$SSH_PORT
LAB_SMB_PORT=$SMB_PORT
LAB_SSH_KEY=$(IMG)/id_ed25519
LAB_HOST_KEY=$(cut -d' ' -f1,2 "$(IMG)/host_ed25519.pub")
LAB_PEER_IFACE=$TAP
LAB_PEER_ADDR=$PEER_ADDR
LAB_NETNS=$NETNS
LAB_NS_IFACE=$TAP1
LAB_NS_ADDR=$NS_ADDR
LAB_GUEST_DATA_ADDR=$GUEST_DATA_ADDR
LAB_DATA_MAC=$DATA_MAC
LAB_DATA1_MAC=$DATA1_MAC
LAB_DATA_LINKS=$DATA_LINKS
LAB_REP_MAC=$REP_MAC
LAB_MONITOR=$RUN/monitor.sock
LAB_DISKS=$DISKS
LAB_RUN=$RUN
ENV
}

resync_clock() { gssh "date -s @$(date +%s) >/dev/null"; }

# One build at a time: a second caller waits for the first's image and saved guest instead of making its own.
locked_ensure() {
  exec 9>"$CACHE/.lock"
  flock 9
  ensure_image
  ensure_golden
  flock -u 9
}

cmd_prepare() {
  preflight
  running && { say "the guest is running: nothing to prepare"; return 0; }
  locked_ensure
  say "ready: image $(IMG), saved guest $(GOLD)"
}

cmd_up() {
  preflight
  if running && gssh true </dev/null >/dev/null 2>&1; then ensure_master || true; write_env; say "already running"; cmd_status; return 0; fi
  stop_qemu
  locked_ensure
  mkdir -p "$RUN"
  local s; s=$(elapsed)
  rm -rf "$RUN/states"  # saved in the overlays replaced here
  for f in root $(seq -f 'disk%g' 1 "$DISKS") $SMART_DISKS; do
    rm -f "$RUN/$f.qcow2"
    qemu-img create -q -f qcow2 -b "$(GOLD)/$f.qcow2" -F qcow2 "$RUN/$f.qcow2"
  done
  start_qemu "$RUN" -incoming "exec:zstd -dc $(GOLD)/state.zst"
  wait_migration
  hmp cont >/dev/null
  wait_ssh 60
  resync_clock
  hmp "savevm clean" >/dev/null
  write_env
  say "restored a booted guest to SSH in $(echo "$(elapsed) - $s" | bc) s"
  cmd_status
}

check_state() { [[ $1 =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] || die "a state name is lower-case letters, digits and -: $1"; }

cmd_reset() {
  local state=${1:-clean} connect=${2:-} s answer
  check_state "$state"
  running || die "the lab is not running (make lab)"
  [ "$state" = clean ] || [ -f "$RUN/states/$state" ] || die "no saved state $state (lab/lab.sh save $state)"
  s=$(elapsed)
  ssh -O exit -o "ControlPath=$RUN/cm" x 2>/dev/null || true
  ! nvme_in || cmd_nvme off  # a test that plugged it in and failed before taking it out (QEMU cannot save it)
  answer=$(hmp "loadvm $state")
  [ -z "$answer" ] || die "loadvm $state: $answer"
  if [ "$connect" != --no-ssh ]; then
    wait_ssh 60
    resync_clock
  fi
  # This machine's side of the data links back to defaults (the guest side went back with loadvm).
  ip link set "$TAP" mtu 1500 2>/dev/null || true
  ip -n "$NETNS" link set "$TAP1" mtu 1500 2>/dev/null || true
  say "reset to $state in $(echo "$(elapsed) - $s" | bc) s"
}

cmd_save() {
  local state=${1:-} answer
  check_state "$state"
  [ "$state" != clean ] || die "clean is saved by up"
  running || die "the lab is not running (make lab)"
  ! nvme_in || cmd_nvme off  # QEMU cannot save a guest with an NVMe controller in it
  # Settled first (the pool's last txg written, udev done): a state saved mid-flight costs every restore ~2 s.
  gssh 'zpool sync 2>/dev/null; udevadm settle; sleep 2' || true
  answer=$(hmp "savevm $state")
  [ -z "$answer" ] || die "savevm $state: $answer"
  mkdir -p "$RUN/states" && touch "$RUN/states/$state"
  say "saved the guest as $state"
}

# The NVMe drive into its PCIe slot or out of it: a hot plug the guest sees as one. QEMU cannot save a guest with an
# NVMe controller in it, so it goes out before any save or reset (tests plug it in only for themselves).
NVME_ID=/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_TARNNVME1
nvme_in() { hmp "info pci" | grep -q "1b36:0010"; }
cmd_nvme() {
  local answer _
  running || die "the lab is not running (make lab)"
  case "${1:-}" in
    on)
      nvme_in || { answer=$(hmp "device_add nvme,drive=nvme1,serial=TARNNVME1,id=nvme1dev,bus=nvslot")
                   [ -z "$answer" ] || die "device_add: $answer"; }
      for _ in $(seq 1 120); do gssh "test -e $NVME_ID" && { say "NVMe drive in: $NVME_ID"; return 0; }; sleep 0.5; done
      die "the guest did not see the NVMe drive" ;;
    off)
      nvme_in || return 0
      hmp "device_del nvme1dev" >/dev/null
      for _ in $(seq 1 60); do nvme_in || { say "NVMe drive out"; return 0; }; sleep 0.5; done
      die "the guest did not let the NVMe drive go" ;;
    *) die "usage: lab/lab.sh nvme on|off" ;;
  esac
}

# The replication wire addressed at run time (not in any saved state: a reset to clean leaves it unaddressed, as the
# tests expect). Run again, it changes nothing.
cmd_wire() {
  running || die "the lab is not running (make lab)"
  gssh "nic=\$(ip -br link | awk '\$3 == \"$REP_MAC\" || \$3 == \"$REP_GUEST_MAC\" {print \$1; exit}')
    [ -n \"\$nic\" ] || { echo 'no replication NIC ($REP_MAC)' >&2; exit 1; }
    ip link set dev \"\$nic\" address $REP_GUEST_MAC && ip link set dev \"\$nic\" up && ip addr replace $REP_ADDR dev \"\$nic\"" \
    || die "could not address the replication wire"
  say "replication wire: $REP_ADDR (MAC $REP_GUEST_MAC)"
}

cmd_status() {
  running || { echo "lab: not running"; return 1; }
  cat <<TXT
The lab guest is up (pid $(cat "$RUN/qemu.pid")): Debian 12 with $(gssh 'zfs version 2>/dev/null | head -1' || echo '?').
  shell:      make lab-ssh      (ssh -i $(IMG)/id_ed25519 -p $SSH_PORT root@127.0.0.1)
  SMB:        smbclient -p $SMB_PORT //127.0.0.1/<share>
  data links: guest $GUEST_DATA_ADDR (NIC $DATA_MAC) ↔ this machine $PEER_ADDR on $TAP;
              guest NIC $DATA1_MAC ↔ ip netns exec $NETNS … ($NS_ADDR on $TAP1)
  disks:      /dev/disk/by-id/virtio-zfsdisk1 … zfsdisk$DISKS in the guest (blank, $DISK_SIZE each);
              SATA ata-TarnLab_HDD_TARNSATA1, ata-TarnLab_SSD_TARNSATA2 ($SMART_SIZE, SMART); NVMe: lab/lab.sh nvme on
  settings:   $RUN/lab.env
TXT
}

case "${1:-up}" in
  up) cmd_up ;;
  prepare) cmd_prepare ;;
  reset) cmd_reset "${2:-clean}" "${3:-}" ;;
  save) cmd_save "${2:-}" ;;
  nvme) cmd_nvme "${2:-}" ;;
  wire) cmd_wire ;;
  down) stop_qemu; echo "lab: stopped" ;;
  status) cmd_status ;;
  ssh) shift; running || die "the lab is not running (make lab)"; if [ $# -eq 0 ]; then
         mapfile -t o < <(ssh_opts); exec ssh -t "${o[@]}" root@127.0.0.1; else gssh "$@"; fi ;;
  *) die "usage: lab/lab.sh up|prepare|reset [state [--no-ssh]]|save state|nvme on|off|wire|down|status|ssh [cmd]" ;;
esac
