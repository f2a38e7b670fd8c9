#!/usr/bin/env bash
# Runs net_check as several processes on this machine over the loopback interface, each process
# told by WEFT_HOST_ID which "host" it is on, so the ranks of different hosts use the network.
#   run_loopback.sh NET_CHECK CASE [--one-host] [--strict-cause] [--max-bytes N] [--plugin PATH NAME]
#                   [--timeout-ms MS] [--env NAME=VALUE]...
# CASE:
#   2x1          2 hosts x 1 rank (the network only)
#   2x2          2 hosts x 2 ranks (shared memory within a host, the network between hosts)
#   4x1          4 hosts x 1 rank (the network only)
#   3x1          3 hosts x 1 rank (a number of ranks that is not a power of two)
#   3x2          3 hosts x 2 ranks
#   1x3-noshm    1 host x 3 ranks with NCCL_SHM_DISABLE=1 (the network between ranks of one host)
#   killed-peer  2 hosts x 2 ranks; rank 3 SIGKILLs itself mid-loop; the others must fail within
#                WEFT_TIMEOUT_MS plus a margin, not hang, and at least one error must name rank 3
#                (with --strict-cause: every survivor's error)
# --strict-cause: see killed-peer. --one-host leaves WEFT_HOST_ID and NCCL_SHM_DISABLE unset: every rank on one host (shared
# memory), which checks net_check and this script without the network transport.
# --plugin PATH NAME: every rank loads the ncclNet plugin PATH (NCCL_NET_PLUGIN) and must use its network
# NAME (NCCL_NET), so a plugin that fails to load fails the run instead of falling back to Socket.
# --timeout-ms: WEFT_TIMEOUT_MS of every rank (10000). --env NAME=VALUE: one more setting for every rank.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

usage="usage: $0 NET_CHECK CASE [--one-host] [--strict-cause] [--max-bytes N] [--plugin PATH NAME] [--timeout-ms MS] [--env NAME=VALUE]..."
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
net_check=$1
case_name=$2
shift 2
one_host=0
strict_cause=0
max_bytes=16M
timeout_ms=10000
extra_env=()
while [ $# -gt 0 ]; do
  case $1 in
    --one-host) one_host=1 ;;
    --strict-cause) strict_cause=1 ;;
    --max-bytes) max_bytes=$2; shift ;;
    --plugin)
      [ $# -ge 3 ] || { echo "$usage" >&2; exit 2; }
      [ -f "$2" ] || { echo "plugin not found at $2" >&2; exit 2; }
      extra_env+=(NCCL_NET_PLUGIN=$2 NCCL_NET=$3)
      shift 2 ;;
    --timeout-ms) timeout_ms=$2; shift ;;
    --env) extra_env+=("$2"); shift ;;
    *) echo "unknown argument $1" >&2; echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$net_check" ] || { echo "net_check not found at $net_check" >&2; exit 2; }

nc_init_logs
trap nc_kill_all EXIT
port=$(nc_free_port)
common=(NCCL_COMM_ID=127.0.0.1:$port NCCL_SOCKET_IFNAME=lo WEFT_TIMEOUT_MS=$timeout_ms WEFT_DEVICE=host
        "${extra_env[@]}")

# start_ranks NRANKS RANKS_PER_HOST EXTRA_ENV -- ARGS_FOR_RANK...: ARGS_FOR_RANK is a function
# name called with the rank that prints net_check's arguments for it, one per line.
start_ranks() {
  local n=$1 per_host=$2 extra=$3 argsfn=$4 r
  for ((r = 0; r < n; ++r)); do
    local envs=("${common[@]}" RANK=$r WORLD_SIZE=$n)
    if [ $one_host = 0 ]; then
      envs+=(WEFT_HOST_ID=loophost$((r / per_host)))
      [ -n "$extra" ] && envs+=($extra)
    fi
    local args
    mapfile -t args < <($argsfn $r)
    nc_start "rank$r" 120 -- "${envs[@]}" -- "$net_check" "${args[@]}"
  done
}

check_args() { printf '%s\n' --max-bytes "$max_bytes" --deadline 100; }

event_file="$NC_LOGDIR/event"
killed_args() {
  if [ "$1" = 3 ]; then
    printf '%s\n' --die-after 20 --event-file "$event_file" --loop-count 4096
  else
    printf '%s\n' --until-error 60 --event-file "$event_file" --loop-count 4096
  fi
}

echo "net_check over loopback: case $case_name, port $port, WEFT_TIMEOUT_MS=$timeout_ms${extra_env[*]:+, ${extra_env[*]}}, logs in $NC_LOGDIR"
status=0
case $case_name in
  2x1) start_ranks 2 1 "" check_args ;;
  2x2) start_ranks 4 2 "" check_args ;;
  4x1) start_ranks 4 1 "" check_args ;;
  3x1) start_ranks 3 1 "" check_args ;;
  3x2) start_ranks 6 2 "" check_args ;;
  1x3-noshm) start_ranks 3 3 "NCCL_SHM_DISABLE=1" check_args ;;
  killed-peer) start_ranks 4 2 "" killed_args ;;
  *) echo "unknown case $case_name" >&2; exit 2 ;;
esac
nc_wait_all

if [ "$case_name" = killed-peer ]; then
  nc_expect rank3 137 || status=1
  named=0
  for r in 0 1 2; do
    nc_expect "rank$r" 0 || status=1
    nc_check_error_report "rank$r" $((timeout_ms + 10000)) || status=1
    if nc_error_names_rank "rank$r" 3; then
      named=$((named + 1))
    elif [ $strict_cause = 1 ]; then
      echo "  rank$r: the error does not name the dead rank 3"
      status=1
    else
      echo "  NOTE rank$r: the error does not name the dead rank 3 (the cause did not travel over the network)"
    fi
  done
  [ $named -gt 0 ] || { echo "  no survivor's error names the dead rank 3"; status=1; }
else
  nc_expect_all_pass || status=1
fi
nc_finish $status "$case_name"
