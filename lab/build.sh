#!/usr/bin/env bash
# Build the lab guest image: Debian 12 + OpenZFS 2.3 (bookworm-backports, DKMS) + Samba, NFS, fio, iperf3.
# Usage: lab/build.sh OUTDIR    (OUTDIR must not exist; written as OUTDIR.tmp, renamed only on success)
# Produces: root.raw (ext4), vmlinuz, initrd.img, id_ed25519{,.pub} (root's key), host_ed25519.pub, versions.txt
set -euo pipefail
out=$1
[ ! -e "$out" ] || { echo "lab build: $out exists" >&2; exit 1; }
work="$out.tmp"
rm -rf "$work"
mkdir -p "$work"
R="$work/rootfs"

mirror=$(awk '/^URIs:/ && !/security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
secmirror=$(awk '/^URIs:/ && /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
  mirror=$(awk '/^deb / && !/security/ {print $2; exit}' /etc/apt/sources.list)
  secmirror=$(awk '/^deb / && /security/ {print $2; exit}' /etc/apt/sources.list)
fi
[ -n "$mirror" ] || { echo "lab build: no Debian mirror found in the host's apt sources" >&2; exit 1; }
[ -n "$secmirror" ] || secmirror="${mirror%/debian}/debian-security"

cleanup() {
  for m in dev/pts dev sys proc; do mountpoint -q "$R/$m" 2>/dev/null && umount -l "$R/$m"; done
  return 0
}
trap 'cleanup; echo "lab build failed; nothing was cached" >&2; rm -rf "$work"' ERR
trap cleanup EXIT
step() { printf '[lab build %4ss] %s\n' "$SECONDS" "$*"; }
in_root() { chroot "$R" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }

# mmdebstrap, not debootstrap: apt fetches and unpacks the base in one pass (48 s against 84 s here).
step "mmdebstrap (minbase) from $mirror"
mmdebstrap --variant=minbase \
  --include=systemd-sysv,udev,kmod,dbus,iproute2,openssh-server,ca-certificates,procps,less,iputils-ping,python3 \
  bookworm "$R" "$mirror" >"$work/mmdebstrap.log" 2>&1 || { tail -20 "$work/mmdebstrap.log" >&2; false; }

step "apt sources: main contrib, backports; OpenZFS pinned to bookworm-backports"
rm -f "$R/etc/apt/sources.list"
cat >"$R/etc/apt/sources.list.d/debian.sources" <<SRC
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates bookworm-backports
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $secmirror
Suites: bookworm-security
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
cat >"$R/etc/apt/preferences.d/zfs-backports" <<'PIN'
Package: zfs-dkms zfsutils-linux zfs-zed libnvpair3linux libuutil3linux libzfs6linux libzpool6linux libzfs4linux libzpool5linux
Pin: release n=bookworm-backports
Pin-Priority: 990
PIN
printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"
chmod +x "$R/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$R/etc/resolv.conf"
for m in proc sys dev dev/pts; do mount --bind "/$m" "$R/$m"; done

step "apt-get update"
in_root apt-get update -qq
# One initramfs, made at the end: the kernel, dkms and zfs packages would each make it again (3 x ~15 s).
in_root dpkg-divert --local --rename --add /usr/sbin/update-initramfs >/dev/null
ln -s /bin/true "$R/usr/sbin/update-initramfs"
step "kernel, headers, DKMS toolchain (zstd first: a zstd initramfs)"
in_root apt-get install -y -qq --no-install-recommends zstd >/dev/null
in_root apt-get install -y -qq --no-install-recommends linux-image-amd64 linux-headers-amd64 initramfs-tools \
  dkms build-essential >/dev/null
KV=$(basename "$(ls -d "$R"/lib/modules/*/ | sort -V | tail -1)")
step "OpenZFS (zfs-dkms builds the module for $KV; takes minutes)"
# KCFLAGS=-g0: no debug info, which DKMS strips from the installed module anyway (same 9.0 MB of modules; the
# build 281 s against 375 s on this machine, idle).
in_root env KCFLAGS=-g0 apt-get install -y -qq --no-install-recommends zfs-dkms zfsutils-linux zfs-zed >"$work/zfs.log" 2>&1 \
  || { tail -30 "$work/zfs.log" >&2; false; }
in_root dkms status | grep -q "zfs/.*$KV.*installed" || { echo "zfs DKMS module missing for $KV" >&2; in_root dkms status >&2; false; }
# zed runs, as on a NAS, without its two zedlets that fire on every event: all-syslog (a bash script per event) and
# the zfs-list cacher (one per history event; it only acts where zfs-mount-generator's cache is on). Under emulation
# each costs the guest ~0.5 s of CPU: a mirror's zpool create took 7.9-13.6 s with them, 2.5-4.5 s without. Tarn
# does not read zed's output (its sampler checks pool health itself).
rm -f "$R/etc/zfs/zed.d/all-syslog.sh" "$R/etc/zfs/zed.d/history_event-zfs-list-cacher.sh"

step "services and tools: samba, nfs, fio, iperf3, …"
in_root apt-get install -y -qq --no-install-recommends samba samba-vfs-modules smbclient cifs-utils nfs-kernel-server nfs-common \
  fio iperf3 ethtool bridge-utils jq sudo netbase kmod coreutils >/dev/null
# Directory services: a member server's winbind and Kerberos tools, and what makes the second guest a Samba AD DC
# (samba-ad-provision is only a Recommends of samba) or an OpenLDAP server (slapd, unconfigured until a test
# provisions it). Nothing of it runs until a test asks: winbind and slapd are disabled below, samba-ad-dc starts only
# where smb.conf says server role = dc.
step "directory services: winbind, krb5, samba-ad-dc, slapd, sssd"
in_root apt-get install -y -qq --no-install-recommends winbind libnss-winbind krb5-user samba-ad-dc samba-ad-provision \
  ldb-tools slapd ldap-utils sssd-ldap libnss-sss sssd-tools bind9-host >/dev/null
in_root systemctl disable --quiet winbind slapd sssd
# Their packages put winbind and sss into nsswitch.conf; a NAS has neither until Tarn joins it to a directory (and
# adds its own), so the lab starts as such a NAS does.
sed -i -E '/^[a-z]+:/ s/ (winbind|sss)\b//g' "$R/etc/nsswitch.conf"
# smartmontools 7.4 from backports (bookworm's 7.3 runs no NVMe self-tests). smartd stays off: Tarn reads and tests
# the disks itself, and a daemon polling them too would skew what the lab counts.
in_root apt-get install -y -qq --no-install-recommends -t bookworm-backports smartmontools >/dev/null
in_root systemctl disable --quiet smartmontools.service

# Block and power (issue 45): LIO's rtslib (targetctl, and the unit that restores its configuration at boot) for the
# first guest's targets, open-iscsi for the second guest as their initiator, NUT for the UPS (inert: MODE=none until
# Tarn configures it).
step "block and power: rtslib-fb, open-iscsi, nut"
in_root apt-get install -y -qq --no-install-recommends python3-rtslib-fb open-iscsi nut-server nut-client >/dev/null
in_root systemctl disable --quiet nut.target nut-server nut-monitor nut-driver-enumerator.path nut-driver-enumerator \
  2>/dev/null || true

step "configure the guest"
echo lab-guest >"$R/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 lab-guest\n' >"$R/etc/hosts"
echo '/dev/vda / ext4 defaults,noatime,errors=remount-ro 0 1' >"$R/etc/fstab"
ssh-keygen -q -t ed25519 -N '' -C tarn-lab -f "$work/id_ed25519"
install -d -m 700 "$R/root/.ssh"
install -m 600 "$work/id_ed25519.pub" "$R/root/.ssh/authorized_keys"
echo root:lab | chroot "$R" chpasswd
cp "$R/etc/ssh/ssh_host_ed25519_key.pub" "$work/host_ed25519.pub"
mkdir -p "$R/etc/systemd/network"
printf '[Match]\nMACAddress=52:54:00:12:34:56\n\n[Network]\nDHCP=ipv4\n' >"$R/etc/systemd/network/10-mgmt.network"
# The data NIC belongs to Tarn's tests: networkd leaves it alone.
printf '[Match]\nName=en* eth*\n\n[Link]\nUnmanaged=yes\n' >"$R/etc/systemd/network/20-other.network"
in_root systemctl enable systemd-networkd >/dev/null 2>&1
# Masked: what a lab guest never needs and what would wake at random under emulation, where each costs seconds of
# CPU in the middle of a test (apt's daily runs, e2scrub, fstrim, the dpkg backup; nmbd's NetBIOS browsing;
# pNFS block layout).
in_root systemctl mask samba-ad-dc iperf3 nmbd nfs-blkmap e2scrub_reap apt-daily.timer apt-daily-upgrade.timer \
  dpkg-db-backup.timer e2scrub_all.timer fstrim.timer >/dev/null
echo 'nameserver 10.0.2.3' >"$R/etc/resolv.conf"
# Serial console login for debugging; quiet, fast boot.
in_root systemctl enable serial-getty@ttyS0 >/dev/null 2>&1 || true
mkdir -p "$R/etc/systemd/system.conf.d"
# Starts get systemd's own 90 s (it was 30 s): under emulation on a busy machine a start can take longer, and in one
# such run nfs-server refused connections after a reboot. Stops stay short (a reboot waits for them).
printf '[Manager]\nDefaultTimeoutStopSec=10s\n' >"$R/etc/systemd/system.conf.d/lab.conf"
printf 'UseDNS no\n' >"$R/etc/ssh/sshd_config.d/lab.conf"

{
  echo "kernel $KV"
  in_root dpkg-query -W -f='${Package} ${Version}\n' zfsutils-linux zfs-dkms samba nfs-kernel-server fio iperf3 smartmontools \
    winbind slapd sssd-ldap
} >"$work/versions.txt"

step "initramfs"
# Only what mounts the root (virtio disk, ext4): MODULES=most made a 30 MB initrd whose unpacking and udev pass
# cost seconds of every (emulated) boot.
sed -i 's/^MODULES=.*/MODULES=list/' "$R/etc/initramfs-tools/initramfs.conf"
printf '%s\n' virtio_pci virtio_blk ext4 >>"$R/etc/initramfs-tools/modules"
rm "$R/usr/sbin/update-initramfs"
in_root dpkg-divert --local --rename --remove /usr/sbin/update-initramfs >/dev/null
in_root update-initramfs -c -k "$KV" >/dev/null

step "slim: drop the toolchain and caches"
in_root apt-mark manual zfsutils-linux zfs-zed >/dev/null
in_root apt-get clean
rm -rf "$R"/var/lib/apt/lists/* "$R"/usr/share/doc/* "$R"/usr/share/man/* "$R/usr/sbin/policy-rc.d" \
  "$R"/var/lib/dkms/zfs/*/build "$R"/usr/src/zfs-*
cleanup

step "image: kernel, initrd, ext4 root"
cp "$R/boot/vmlinuz-$KV" "$work/vmlinuz"
cp "$R/boot/initrd.img-$KV" "$work/initrd.img"
truncate -s 6G "$work/root.raw"
mkfs.ext4 -q -F -L labroot -d "$R" "$work/root.raw"
rm -rf "$R"
trap - ERR
mv "$work" "$out"
step "done: $out"
