#!/usr/bin/env bash
# Runs a shell script inside one or two throw-away QEMU guests that have a Soft-RoCE device
# (rdma_rxe), so verbs code can be tested on a machine without RDMA hardware.
#   lab.sh MODE CMDFILE [BIN...]
# MODE:
#   single  one guest, 2 vCPUs; rxe0 on veth0 (10.99.0.1), both ends of a test on rxe0 (rxe loopback)
#   pair    two guests, 1 vCPU each; their virtio NICs are joined by a QEMU socket netdev on
#           127.0.0.1; server 10.99.0.1, client 10.99.0.2, rxe0 on eth0 in each
# CMDFILE runs under the guest's sh (busybox ash) with LAB_ROLE (single|server|client), LAB_ME,
# LAB_PEER, LAB_DEV=rxe0, LAB_GID_INDEX=1, LAB_BIN=/opt/bin and LAB_LIB (helpers, see README.md).
# Each BIN (an executable or a shared library) goes to /opt/bin with the libraries it needs.
# Exit: 0 every guest's CMDFILE exited 0; 1 one failed or timed out; 2 usage; 77 the lab cannot
# run here (ctest's skip code). Knobs and pitfalls: README.md.
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin # depmod, ldconfig: not on a user's PATH everywhere

say() { printf 'lab: %s\n' "$*"; }
skip() { say "SKIP: $*"; exit 77; }
usage() { echo "lab.sh: $*" >&2; echo "usage: lab.sh single|pair CMDFILE [BIN...]" >&2; exit 2; }

[ $# -ge 2 ] || usage "missing arguments"
mode=$1 cmdfile=$2
shift 2
case $mode in single | pair) ;; *) usage "unknown mode '$mode'" ;; esac
[ -f "$cmdfile" ] && [ -r "$cmdfile" ] || usage "cannot read $cmdfile"
for b in "$@"; do [ -f "$b" ] || usage "no such file: $b"; done
read -ra exports <<<"${LAB_EXPORT:-}"
for kv in "${exports[@]}"; do
  [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage "LAB_EXPORT: '$kv' is not NAME=VALUE"
done

timeout_s=${LAB_TIMEOUT:-300}
boot_s=${LAB_BOOT_TIMEOUT:-120}
grace_s=${LAB_FAIL_GRACE:-30}
if [ "$mode" = single ]; then mem=${LAB_MEM:-1024}; else mem=${LAB_MEM:-768}; fi
cache=${WEFT_IB_LAB_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/weft/ib-lab}

# ---- host packages: normally present already; installed when missing and we may
pkgs=(qemu-system-x86 busybox-static cpio kmod rdma-core ibverbs-utils ibverbs-providers perftest iproute2)
missing=()
for p in "${pkgs[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  say "installing ${missing[*]}"
  # another lab may be installing at the same moment: wait for the dpkg lock instead of failing
  apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq --no-install-recommends)
  "${apt[@]}" install "${missing[@]}" >/dev/null ||
    { apt-get -o DPkg::Lock::Timeout=600 -qq update && "${apt[@]}" install "${missing[@]}" >/dev/null; } ||
    say "apt-get install failed; going on with what is there"
fi
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not found (Debian: qemu-system-x86)"
busybox=/bin/busybox
[ -x "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 || skip "no static $busybox (Debian: busybox-static)"
command -v cpio >/dev/null && command -v depmod >/dev/null || skip "cpio or depmod missing"

# ---- Debian kernel, extracted (not installed) into the cache once
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 # two labs starting together must not both download it
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}' || true)
if [ -n "$kpkg" ] && [ ! -d "$cache/kernel-${kpkg#linux-image-}" ]; then
  say "fetching $kpkg into $cache (once)"
  rm -rf "$cache"/fetch.* # left by an interrupted fetch; nobody else fetches while we hold the lock
  tmp=$(mktemp -d "$cache/fetch.XXXXXX")
  get() { (cd "$tmp" && timeout 900 apt-get -qq download "$kpkg") >"$tmp/apt.log" 2>&1; }
  if get || { [ "$(id -u)" = 0 ] && apt-get -qq update >/dev/null 2>&1 && get; }; then
    kver=${kpkg#linux-image-}
    dpkg-deb -x "$tmp"/*.deb "$tmp/x"
    mods=$tmp/x/lib/modules/$kver
    [ -d "$mods" ] || mods=$tmp/x/usr/lib/modules/$kver
    depmod -b "${mods%/lib/modules/*}" "$kver"
    mkdir "$tmp/k"
    mv "$tmp/x/boot/vmlinuz-$kver" "$tmp/k/vmlinuz"
    mv "$mods" "$tmp/k/modules"
    # keep what a lab could want (net, crypto, rdma, virtio): the rest (sound, gpu, NIC and
    # wireless drivers...) is 330 of the 400 MB
    (cd "$tmp/k/modules/kernel" && rm -rf sound drivers/net/wireless drivers/net/ethernet &&
      find fs -mindepth 1 -maxdepth 1 ! -name configfs -exec rm -rf {} + &&
      find drivers -mindepth 1 -maxdepth 1 ! -name infiniband ! -name net ! -name virtio -exec rm -rf {} +)
    mv "$tmp/k" "$cache/kernel-$kver" # appears whole or not at all
  else
    cat "$tmp/apt.log"
  fi
  rm -rf "$tmp"
fi
# without apt metadata (offline) any kernel cached earlier will do
kdir=$cache/kernel-${kpkg#linux-image-}
[ -n "$kpkg" ] && [ -d "$kdir" ] || kdir=$(ls -d "$cache"/kernel-* 2>/dev/null | sort -V | tail -1 || true)
[ -n "$kdir" ] && [ -f "$kdir/vmlinuz" ] || skip "cannot obtain the Debian kernel (apt-get download ${kpkg:-linux-image-amd64} failed)"
exec 9>&-

# ---- per-run work dir: guest root, initramfs, consoles
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-ib-lab.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "${LAB_KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
root=$work/root
# usr-merged like the host, so the paths ldd prints are valid in the guest as well
mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc/libibverbs.d,proc,sys,dev,tmp,run,opt/bin,lab/modules}
for d in bin sbin lib lib64; do ln -s usr/$d "$root/$d"; done

bindirs= # set before the BINs are copied, see libs
# put SRC DEST: copy a file to DEST in the guest, following symlinks, once
put() {
  [ -e "$root$2" ] && return 0
  mkdir -p "$(dirname "$root$2")"
  cp -L "$1" "$root$2"
}
# libs FILE: "soname path" of each library the loader finds for FILE (none if FILE is static).
# The BINs' own directories come first, so a BIN that is a library (libnccl.so.2) is the one
# the other BINs get, as in the guest, where they all sit in /opt/bin.
libs() { LD_LIBRARY_PATH=$bindirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $1 ~ /^\// {print $1, $1}' || true; }
# system FILE: the file with the libraries it needs, at the host's paths
system() {
  local so path
  put "$1" "$1"
  while read -r so path; do put "$path" "$path"; done < <(libs "$1")
}
# user BIN: BIN to /opt/bin; its libraries from outside the system directories (a build tree) too
user() {
  local so path
  put "$1" "/opt/bin/$(basename "$1")"
  while read -r so path; do
    case $path in
      /lib/* | /lib64/* | /usr/lib/* | /usr/lib64/*) put "$path" "$path" ;;
      *) put "$path" "/opt/bin/$so" ;;
    esac
  done < <(libs "$1")
}

which_of() { # first of the candidate paths that exists
  local p
  for p in "$@"; do [ -x "$p" ] && { echo "$p"; return; }; done
}
tools=()
for t in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong ib_write_bw ib_write_lat ib_send_bw ib_send_lat ib_read_bw ib_read_lat rdma; do
  p=$(which_of /usr/bin/$t /bin/$t /usr/sbin/$t)
  [ -n "$p" ] || skip "$t not found (Debian: ibverbs-utils perftest iproute2)"
  tools+=("$p")
done
ip=$(which_of /usr/sbin/ip /sbin/ip /usr/bin/ip /bin/ip)
[ -n "$ip" ] || skip "iproute2's ip not found"
for t in "${tools[@]}"; do system "$t"; done
put "$ip" /usr/sbin/ip
while read -r so path; do put "$path" "$path"; done < <(libs "$ip")
# Weft dlopens libibverbs.so.1 at run time, and libibverbs loads the rxe provider by its path
verbs=$(ldconfig -p | awk '$1 == "libibverbs.so.1" && !v {v = $NF} END {print v}')
rxe=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
[ -n "$verbs" ] && [ -f "$rxe" ] && [ -f /etc/libibverbs.d/rxe.driver ] || skip "libibverbs or its rxe provider missing (Debian: ibverbs-providers)"
system "$verbs"
system "$rxe"
put /etc/libibverbs.d/rxe.driver /etc/libibverbs.d/rxe.driver
for b in "$@"; do bindirs=$bindirs${bindirs:+:}$(cd "$(dirname "$b")" && pwd); done
for b in "$@"; do user "$b"; done
if [ "${LAB_STRIP:-1}" = 1 ] && command -v objcopy >/dev/null; then
  # debug info is most of a Weft build's size and only slows the initramfs
  for f in "$root"/opt/bin/*; do objcopy --strip-debug "$f" 2>/dev/null || true; done
fi
cp "$busybox" "$root/usr/bin/busybox"
for a in $("$busybox" --list-full); do [ -e "$root/$a" ] || [ -L "$root/$a" ] || ln -s /usr/bin/busybox "$root/$a"; done

# kernel modules, each after the ones it needs (modules.dep lists them)
moddir=$kdir/modules
declare -A loaded=()
: >"$root/lab/modules/order"
add_mod() {
  local line dep
  [ -n "${loaded[$1]:-}" ] && return 0
  loaded[$1]=1
  line=$(grep -m1 -E "(^|/)$1\.ko(\.xz|\.zst)?:" "$moddir/modules.dep") || {
    grep -qE "/$1\.ko$" "$moddir/modules.builtin" && return 0
    skip "kernel module $1 not in $kdir"
  }
  for dep in ${line#*:}; do
    dep=${dep##*/}
    add_mod "${dep%%.ko*}"
  done
  local file=${line%%:*} name
  [ -f "$moddir/$file" ] || { say "error: $file was pruned from the cache; extend the pruning in lab.sh and remove $kdir"; exit 1; }
  name=$(basename "${file%%.ko*}").ko
  case $file in
    *.xz) xz -dc "$moddir/$file" >"$root/lab/modules/$name" ;;
    *.zst) zstd -qdc "$moddir/$file" >"$root/lab/modules/$name" ;;
    *) cp "$moddir/$file" "$root/lab/modules/$name" ;;
  esac
  echo "$name" >>"$root/lab/modules/order"
}
# rdma_rxe asks the crypto API for "crc32" when a link is added: without crc32_generic
# `rdma link add` fails with ENOENT. rdma_ucm serves perftest's -R (rdma_cm) mode.
for m in crc32_generic virtio_pci virtio_net veth rdma_rxe rdma_ucm; do add_mod "$m"; done

cp "$cmdfile" "$root/lab/cmd.sh"
for kv in "${exports[@]}"; do
  v=${kv#*=}
  printf "export %s='%s'\n" "${kv%%=*}" "${v//\'/\'\\\'\'}"
done >"$root/lab/env"
printf 'root:x:0:0:root:/tmp:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
printf '127.0.0.1 localhost\n10.99.0.1 lab-server lab-single\n10.99.0.2 lab-client\n' >"$root/etc/hosts"

cat >"$root/lab/lib.sh" <<'LIB'
# Helpers for CMDFILEs: . "$LAB_LIB"

# lab_retry N CMD...: run CMD until it succeeds, at most N times, 1 s apart. A verbs client
# whose server is not listening yet fails at once, so clients are started this way.
lab_retry() {
  _n=$1 _i=1
  shift
  until "$@"; do
    [ $_i -ge "$_n" ] && return 1
    _i=$((_i + 1))
    sleep 1
  done
}

# lab_pair LOG CMD...: run a server/client test such as ib_write_bw. The server runs CMD, the
# client runs CMD LAB_PEER; in single mode both run here, the client against 127.0.0.1 (the
# out-of-band TCP exchange; the verbs traffic goes over rxe0). This side's output goes to LOG
# (single mode: the client's; the server's to LOG.server). Status: that of this side (both).
lab_pair() {
  _log=$1
  shift
  case $LAB_ROLE in
    server) timeout 180 "$@" >"$_log" 2>&1 ;;
    client) lab_retry 30 timeout 120 "$@" "$LAB_PEER" >"$_log" 2>&1 ;;
    single)
      timeout 180 "$@" >"$_log.server" 2>&1 &
      _srv=$!
      lab_retry 30 timeout 120 "$@" 127.0.0.1 >"$_log" 2>&1
      _rc=$?
      wait $_srv || _rc=1
      return $_rc
      ;;
  esac
}
LIB

cat >"$root/init" <<'INIT'
#!/bin/sh
# PID 1 of a lab guest: load rdma_rxe, bring up rxe0, run /lab/cmd.sh, print its status, power off.
export PATH=/opt/bin:/usr/bin:/usr/sbin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
role=single
for w in $(cat /proc/cmdline); do case $w in lab_role=*) role=${w#lab_role=} ;; esac; done
up() { cut -d' ' -f1 /proc/uptime; }
echo "LAB-BOOTED role=$role uptime=$(up)"
# a broken lab is a failure (status 125), not a skip: the guest booted, so the lab should work
broken() {
  echo "LAB-BROKEN role=$role: $*"
  dmesg | tail -20
  echo "LAB-EXIT role=$role rc=125"
  poweroff -f
}
while read -r m; do insmod /lab/modules/$m || broken "insmod $m"; done </lab/modules/order
hostname lab-$role
# busybox sh runs its own ip applet ahead of PATH: iproute2's is called by its full path
IP=/usr/sbin/ip
$IP link set lo up
case $role in
  single)
    # rxe in this kernel works only in init_net, and two rxe devices on the ends of one veth
    # pair cannot reach each other (the route is local): one rxe0, both ends of a test on it
    $IP link add veth0 type veth peer name veth1
    $IP addr add 10.99.0.1/24 dev veth0
    $IP link set veth1 up
    $IP link set veth0 up
    me=10.99.0.1 peer=10.99.0.1 netdev=veth0
    ;;
  server) me=10.99.0.1 peer=10.99.0.2 netdev=eth0 ;;
  client) me=10.99.0.2 peer=10.99.0.1 netdev=eth0 ;;
  *) broken "unknown role" ;;
esac
if [ $netdev = eth0 ]; then
  $IP addr add $me/24 dev eth0 || broken "no eth0"
  $IP link set eth0 up
fi
rdma link add rxe0 type rxe netdev $netdev || broken "rdma link add rxe0"
# GID index 1 is the IPv4-mapped (RoCEv2) GID; it shows up shortly after the link
i=0
until grep -q ':ffff:' /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null; do
  i=$((i + 1))
  [ $i -le 100 ] || broken "rxe0 has no IPv4 GID at index 1"
  sleep 0.1
done
if [ $role != single ]; then
  i=0
  until ping -c1 -W1 $peer >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -le 120 ] || broken "peer $peer does not answer ping"
  done
fi
export LAB_ROLE=$role LAB_ME=$me LAB_PEER=$peer LAB_DEV=rxe0 LAB_GID_INDEX=1 LAB_BIN=/opt/bin LAB_LIB=/lab/lib.sh
export LD_LIBRARY_PATH=/opt/bin
. /lab/env
ulimit -l unlimited # verbs pin the memory they register
cd /tmp
echo "LAB-CMD-START role=$role uptime=$(up)"
sh /lab/cmd.sh </dev/null
rc=$?
echo "LAB-EXIT role=$role rc=$rc uptime=$(up)"
poweroff -f
INIT
chmod +x "$root/init"
# uncompressed: unpacking gzip under TCG costs more than reading the bigger file
(cd "$root" && find . | cpio -o -H newc -R 0:0 --quiet) >"$work/initrd"

# ---- boot
# KVM is not used: nested KVM guests hang right after the kernel decompresses on these hosts.
ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }
base=(qemu-system-x86_64 -accel tcg -cpu max -m "$mem" -nodefaults -display none -no-reboot
  -kernel "$kdir/vmlinuz" -initrd "$work/initrd")
append="console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init"
names=() logs=()
t0=$(ms)
start_vm() { # NAME SMP QEMU-ARGS...: start one guest in the background
  local name=$1 smp=$2
  shift 2
  names+=("$name")
  logs+=("$work/$name.console")
  "${base[@]}" -smp "$smp" -serial "file:$work/$name.console" "$@" -append "$append lab_role=$name" \
    </dev/null >"$work/$name.qemu" 2>&1 &
  pids+=($!)
}
if [ "$mode" = single ]; then
  start_vm single 2
  say "booting $(basename "$kdir"), one guest (timeout ${timeout_s}s)"
else
  # the server's QEMU listens on a random free port; another lab may take it first, so retry
  for _ in 1 2 3 4 5 6 7 8; do
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    [ -z "$(ss -Hltn "sport = :$port")" ] || continue
    names=() logs=() pids=()
    start_vm server 1 -netdev "socket,id=n0,listen=127.0.0.1:$port" -device virtio-net-pci,netdev=n0,mac=52:54:00:99:00:01
    until [[ $(ss -Hltnp "sport = :$port") == *"pid=${pids[0]},"* ]]; do
      kill -0 "${pids[0]}" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "${pids[0]}" 2>/dev/null && break
    wait "${pids[0]}" || true
    grep -q 'in use' "$work/server.qemu" || { cat "$work/server.qemu"; skip "QEMU did not start"; }
  done
  [ ${#pids[@]} -gt 0 ] && kill -0 "${pids[0]}" 2>/dev/null || skip "no free port for the socket netdev"
  start_vm client 1 -netdev "socket,id=n0,connect=127.0.0.1:$port" -device virtio-net-pci,netdev=n0,mac=52:54:00:99:00:02
  say "booting $(basename "$kdir"), two guests joined on 127.0.0.1:$port (timeout ${timeout_s}s)"
fi

declare -A booted=() started=() ended=()
timed_out=0 unbooted=0 failed_at='' cut_short=0
exit_of() { sed -n 's/^LAB-EXIT role=[a-z]* rc=\([0-9]*\).*/\1/p' "$1" | tr -d '\r' | tail -1; }
while :; do
  now=$(ms) alive=0
  for i in "${!names[@]}"; do
    n=${names[$i]}
    [ -n "${booted[$n]:-}" ] || ! grep -saq '^LAB-BOOTED' "${logs[$i]}" || booted[$n]=$now
    [ -n "${started[$n]:-}" ] || ! grep -saq '^LAB-CMD-START' "${logs[$i]}" || started[$n]=$now
    if kill -0 "${pids[$i]}" 2>/dev/null; then
      alive=1
      [ -n "${booted[$n]:-}" ] || [ $((now - t0)) -lt $((boot_s * 1000)) ] || unbooted=1
    elif [ -z "${ended[$n]:-}" ]; then
      ended[$n]=$now
      [ -n "${booted[$n]:-}" ] || unbooted=1
      [ "$(exit_of "${logs[$i]}")" = 0 ] || failed_at=${failed_at:-$now}
    fi
  done
  [ $alive = 1 ] || break
  [ $unbooted = 0 ] || break
  # once one guest has failed, its peer is likely to wait for it until LAB_TIMEOUT: cut that short
  if [ -n "$failed_at" ] && [ $((now - failed_at)) -ge $((grace_s * 1000)) ]; then
    cut_short=1
    break
  fi
  if [ $((now - t0)) -ge $((timeout_s * 1000)) ]; then
    timed_out=1
    break
  fi
  sleep 0.2
done
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=()

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }
failed=()
for i in "${!names[@]}"; do
  n=${names[$i]}
  echo "---- guest $n: console ----"
  sed -e 's/\r$//' -e "s/^/[$n] /" "${logs[$i]}"
  rc=$(exit_of "${logs[$i]}")
  if [ -z "${booted[$n]:-}" ] || [ -z "$rc" ]; then
    echo "---- guest $n: qemu ----"
    sed "s/^/[$n] /" "$work/$n.qemu"
  fi
  end=${ended[$n]:-$(ms)}
  say "$n: booted after $([ -n "${booted[$n]:-}" ] && echo "$(secs "$t0" "${booted[$n]}")s" || echo never)," \
    "command ran $(secs "${started[$n]:-$end}" "$end")s, status ${rc:-none}"
  [ "$rc" = 0 ] || failed+=("$n")
done
[ $unbooted = 0 ] || skip "a guest did not boot within ${boot_s}s (LAB_BOOT_TIMEOUT); TCG too slow or QEMU broken here"
[ $timed_out = 0 ] || say "FAIL: timed out after ${timeout_s}s (LAB_TIMEOUT)"
[ $cut_short = 0 ] || say "FAIL: stopped the other guest ${grace_s}s after one failed (LAB_FAIL_GRACE)"
if [ ${#failed[@]} -gt 0 ]; then
  say "FAIL: guest ${failed[*]}: the command failed or did not finish (total $(secs "$t0" "$(ms)")s)"
  exit 1
fi
say "PASS ($mode, total $(secs "$t0" "$(ms)")s)"
