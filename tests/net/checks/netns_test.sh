#!/usr/bin/env bash
# Runs net_check across real network stacks: one network namespace per "host", each joined by a
# veth pair to a bridge that lives in a namespace of its own, addresses 10.A.B.0/24. Nothing
# outside those namespaces is touched (no host interface, route or address), and every namespace
# of the run is deleted on exit, also after a failure or an interrupt.
#   netns_test.sh NET_CHECK CASE [--one-host] [--max-bytes N]
# CASE:
#   2x2      2 hosts x 2 ranks
#   4x1      4 hosts x 1 rank
#   linkcut  4 hosts x 1 rank running AllReduce in a loop; then host 3's link goes down (its
#            bridge-side veth); every rank must report a network error within WEFT_TIMEOUT_MS
#            (10 s; the Socket network's WEFT_NET_LINK_TIMEOUT_MS is 5 s) plus a margin, and no
#            process may hang
# --one-host gives every namespace the same WEFT_HOST_ID: data then moves through shared memory
# and only the bootstrap crosses the bridge, which checks this script without the network transport.
# Exit 77 (ctest's skip code) when namespaces cannot be made here: not root, no CAP_NET_ADMIN,
# no `ip` (iproute2), or no veth/bridge support in the kernel.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

[ $# -ge 2 ] || { echo "usage: $0 NET_CHECK CASE [--one-host] [--max-bytes N]" >&2; exit 2; }
net_check=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
case_name=$2
shift 2
max_bytes=16M
one_host=0
while [ $# -gt 0 ]; do
  case $1 in
    --one-host) one_host=1 ;;
    --max-bytes) max_bytes=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$net_check" ] || { echo "net_check not found at $net_check" >&2; exit 2; }
case $case_name in
  2x2) nhosts=2 per_host=2 ;;
  4x1 | linkcut) nhosts=4 per_host=1 ;;
  *) echo "unknown case $case_name" >&2; exit 2 ;;
esac

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "network namespaces need root (running as uid $(id -u))"
command -v ip >/dev/null || skip "no 'ip' command (install iproute2)"

# Names unique to this run, so runs side by side (or a crashed earlier run) never collide.
tag="wft$$x$RANDOM"
bridge_ns="${tag}-br"
host_ns() { echo "${tag}-h$1"; }
subnet="10.$((RANDOM % 200 + 20)).$((RANDOM % 250))"
host_ip() { echo "$subnet.$(($1 + 1))"; }

cleanup() {
  local ns
  nc_kill_all
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${tag}-" || true); do
    ip netns delete "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

err=$(ip netns add "$bridge_ns" 2>&1) || skip "cannot create a network namespace: $err"
err=$(ip -n "$bridge_ns" link add br0 type bridge 2>&1) || skip "cannot create a bridge in a namespace: $err"
ip -n "$bridge_ns" link set br0 up
for ((h = 0; h < nhosts; ++h)); do
  ns=$(host_ns $h)
  ip netns add "$ns"
  err=$(ip -n "$bridge_ns" link add "v$h" type veth peer name eth0 netns "$ns" 2>&1) ||
    skip "cannot create a veth pair: $err"
  ip -n "$bridge_ns" link set "v$h" master br0 up
  ip -n "$ns" addr add "$(host_ip $h)/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
done

nc_init_logs
timeout_ms=10000
nranks=$((nhosts * per_host))
event_file="$NC_LOGDIR/event"
port=29500
echo "net_check across $nhosts namespaces ($tag, $subnet.0/24): case $case_name, logs in $NC_LOGDIR"

for ((r = 0; r < nranks; ++r)); do
  h=$((r / per_host))
  # Namespaces share the machine's host name and boot id, so each says which host it is.
  envs=(RANK=$r WORLD_SIZE=$nranks NCCL_COMM_ID=$(host_ip 0):$port NCCL_SOCKET_IFNAME=eth0
        WEFT_HOST_ID=nshost$((one_host ? 0 : h)) WEFT_TIMEOUT_MS=$timeout_ms WEFT_NET_LINK_TIMEOUT_MS=5000
        WEFT_DEVICE=host)
  if [ "$case_name" = linkcut ]; then
    args=(--until-error 60 --event-file "$event_file" --loop-count 4096)
  else
    args=(--max-bytes "$max_bytes" --deadline 100)
  fi
  nc_start "rank$r" 120 ip netns exec "$(host_ns $h)" -- "${envs[@]}" -- "$net_check" "${args[@]}"
done

status=0
if [ "$case_name" = linkcut ]; then
  victim=$((nhosts - 1))
  if nc_wait_logs_for LOOP-RUNNING 40; then
    date +%s%N >"$event_file"
    echo "  cutting host $victim's link (veth v$victim in $bridge_ns)"
    ip -n "$bridge_ns" link set "v$victim" down
  else
    status=1
  fi
  nc_wait_all
  for ((r = 0; r < nranks; ++r)); do
    nc_expect "rank$r" 0 || status=1
    nc_check_error_report "rank$r" $((timeout_ms + 10000)) || status=1
  done
else
  nc_wait_all
  nc_expect_all_pass || status=1
fi

nc_finish $status "$case_name"
