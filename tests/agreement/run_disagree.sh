#!/usr/bin/env bash
# Ranks that disagree: every rank of a communicator gets a different environment for the settings
# that steer collectives (scope "agreed" in docs/env.md) and a different source of machine
# constants, on purpose. Weft must put rank 0's values in force everywhere, print a WARN on each
# rank whose own value differs (naming the variable, its value and the value in force), and every
# collective, send/recv and split of net_check must still return exact results.
#   run_disagree.sh NET_CHECK CASE [TUNER_PLUGIN]
# CASE:
#   params      4 ranks on one host (shared memory), each with other NCCL_ALGO, NCCL_PROTO,
#               NCCL_BUFFSIZE, WEFT_NCHANNELS, DDA, one-shot and low-precision settings
#   constants   2 hosts x 2 ranks (the network between hosts): one rank per host measures its
#               constants, the other uses the defaults, one asks for absurd overrides
#   noshm-one   3 ranks on one host where only rank 2 sets NCCL_SHM_DISABLE=1 (it must not end up
#               on the network while its peers use shared memory)
#   plugins     3 ranks of which only rank 1 loads TUNER_PLUGIN: every rank's init must fail, and
#               the error must name rank 1 and the plugin
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../net/checks/lib.sh"

[ $# -ge 2 ] || { echo "usage: $0 NET_CHECK CASE [TUNER_PLUGIN]" >&2; exit 2; }
net_check=$1
case_name=$2
plugin=${3:-}
[ -x "$net_check" ] || { echo "net_check not found at $net_check" >&2; exit 2; }

nc_init_logs
trap nc_kill_all EXIT
port=$(nc_free_port)
cache=$(mktemp -d "${TMPDIR:-/tmp}/weft-disagree-cache.XXXXXX")
common=(NCCL_COMM_ID=127.0.0.1:$port NCCL_SOCKET_IFNAME=lo WEFT_TIMEOUT_MS=20000 WEFT_DEVICE=host NCCL_DEBUG=WARN
        WEFT_CACHE_DIR=$cache)

# start RANK NRANKS ENV...: one net_check process with the common settings and its own.
start() {
  local r=$1 n=$2
  shift 2
  nc_start "rank$r" 120 -- "${common[@]}" RANK=$r WORLD_SIZE=$n "$@" -- "$net_check" --max-bytes 1M --deadline 100
}

# expect_warning RANK TEXT: rank RANK's log has a WARN line containing TEXT.
expect_warning() {
  if grep -F "WARN" "$NC_LOGDIR/rank$1.log" | grep -qF -- "$2"; then
    echo "  rank$1 warned: ...$2..."
    return 0
  fi
  echo "  rank$1 did not warn about: $2"
  nc_show_log "rank$1"
  return 1
}

# expect_only_warns_about RANK VAR: every disagreement warning of rank RANK is about VAR (the one
# variable in which some rank differs from it; net_check's splits renumber the ranks, so any rank
# may become a rank 0 whose value others are told about).
expect_only_warns_about() {
  local others
  others=$(grep -F "differs from rank 0" "$NC_LOGDIR/rank$1.log" | grep -vF "$2=" || true)
  if [ -n "$others" ]; then
    echo "  rank$1 warned about settings that agree:"
    echo "$others"
    return 1
  fi
  echo "  rank$1: no warning beyond $2, as expected"
}

echo "disagreeing ranks: case $case_name, port $port, logs in $NC_LOGDIR"
status=0
case $case_name in
  params)
    start 0 4
    start 1 4 NCCL_ALGO=tree NCCL_PROTO=LL
    start 2 4 RCCL_ENABLE_DDA_ALL_REDUCE=0 WEFT_ONESHOT_MAX_BYTES=0 WEFT_NCHANNELS=4
    start 3 4 NCCL_BUFFSIZE=65536 RCCL_LOW_PRECISION_ENABLE=1 WEFT_LOW_PRECISION_MIN_BYTES=1024 \
      WEFT_TUNER_CONSTANTS=copyGBps=0.05,handoffUs=40
    nc_wait_all
    nc_expect_all_pass || status=1
    expect_warning 1 'NCCL_ALGO="tree" on rank 1 differs from rank 0'"'"'s ""' || status=1
    expect_warning 1 'NCCL_PROTO="LL" on rank 1' || status=1
    expect_warning 2 'RCCL_ENABLE_DDA_ALL_REDUCE="0" on rank 2 differs from rank 0'"'"'s "1"' || status=1
    expect_warning 2 'WEFT_NCHANNELS="4" on rank 2 differs from rank 0'"'"'s "2"' || status=1
    expect_warning 3 'NCCL_BUFFSIZE="65536" on rank 3 differs from rank 0'"'"'s "1048576"' || status=1
    expect_warning 3 'RCCL_LOW_PRECISION_ENABLE="1" on rank 3' || status=1
    expect_warning 3 'WEFT_TUNER_CONSTANTS="copyGBps=0.05,handoffUs=40" on rank 3' || status=1
    ;;
  constants)
    start 0 4 WEFT_HOST_ID=hostA WEFT_TUNER_CALIBRATE=redo
    start 1 4 WEFT_HOST_ID=hostA WEFT_TUNER_CALIBRATE=off
    start 2 4 WEFT_HOST_ID=hostB WEFT_TUNER_CALIBRATE=off
    start 3 4 WEFT_HOST_ID=hostB WEFT_TUNER_CALIBRATE=redo WEFT_TUNER_CONSTANTS=netGBps=0.001,stepUs=500
    nc_wait_all
    nc_expect_all_pass || status=1
    expect_warning 3 'WEFT_TUNER_CONSTANTS="netGBps=0.001,stepUs=500" on rank 3' || status=1
    for r in 0 1 2; do expect_only_warns_about $r WEFT_TUNER_CONSTANTS || status=1; done
    ;;
  noshm-one)
    start 0 3
    start 1 3
    start 2 3 NCCL_SHM_DISABLE=1
    nc_wait_all
    nc_expect_all_pass || status=1
    expect_warning 2 'NCCL_SHM_DISABLE="1" on rank 2 differs from rank 0'"'"'s "0"' || status=1
    ;;
  plugins)
    [ -f "$plugin" ] || { echo "plugins: no tuner plugin at '$plugin'" >&2; exit 2; }
    start 0 3 NCCL_TUNER_PLUGIN=none
    start 1 3 NCCL_TUNER_PLUGIN="$plugin"
    start 2 3 NCCL_TUNER_PLUGIN=none
    nc_wait_all
    for r in 0 1 2; do
      nc_expect rank$r 1 || status=1
      line=$(grep -h "ncclCommInitRank returned" "$NC_LOGDIR/rank$r.log" | head -n 1)
      if echo "$line" | grep -q "different tuner plugins" && echo "$line" | grep -q "rank 1 has tuner plugin"; then
        echo "  rank$r: ${line#*: }"
      else
        echo "  rank$r: init did not fail with a message naming rank 1's plugin: $line"
        status=1
      fi
    done
    ;;
  *) echo "unknown case $case_name" >&2; exit 2 ;;
esac
rm -rf "$cache"
nc_finish $status "$case_name"
