#!/usr/bin/env bash
# TLS on Weft's sockets across real processes: net_check ranks over loopback, each rank its own
# "host" (WEFT_HOST_ID) or all on one host with NCCL_SHM_DISABLE=1, so the bootstrap and the data
# both travel over TCP.
#   tls_test.sh NET_CHECK CASE
# CASE:
#   api-4x1        4 hosts x 1 rank, each calling ncclSetEncryption with one key: every check passes
#   keyfile-noshm  1 host x 4 ranks, NCCL_SHM_DISABLE=1, the key from WEFT_TLS_KEY_FILE: passes
#   wrongkey       4 hosts x 1 rank, rank 3 with another key: every rank fails, none hangs, and the
#                  logs say the TLS handshake failed
#   mixed          as wrongkey, but rank 3 has no encryption at all
#   nolib          WEFT_TLS_LIBSSL names no library: ncclSetEncryption (and, for a key file,
#                  ncclCommInitRank) fails saying OpenSSL cannot be loaded
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

[ $# -eq 2 ] || { echo "usage: $0 NET_CHECK CASE" >&2; exit 2; }
net_check=$1
case_name=$2
[ -x "$net_check" ] || { echo "net_check not found at $net_check" >&2; exit 2; }

nc_init_logs
trap nc_kill_all EXIT
port=$(nc_free_port)
timeout_ms=10000
key_a=weft-tls-test-key-A-0123456789abcdefghijklmnop
key_b=weft-tls-test-key-B-0123456789abcdefghijklmnop
printf '%s\n' "$key_a" >"$NC_LOGDIR/key_a"
common=(NCCL_COMM_ID=127.0.0.1:$port NCCL_SOCKET_IFNAME=lo WEFT_TIMEOUT_MS=$timeout_ms WEFT_DEVICE=host
        NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET)

# start N PER_HOST ENV_FOR_RANK [ARGS...]: ENV_FOR_RANK is a function printing extra NAME=VALUE
# lines for a rank; ARGS go to net_check.
start() {
  local n=$1 per_host=$2 envfn=$3 r
  shift 3
  for ((r = 0; r < n; ++r)); do
    local envs=("${common[@]}" RANK=$r WORLD_SIZE=$n WEFT_HOST_ID=tlshost$((r / per_host)))
    local extra
    mapfile -t extra < <($envfn $r)
    nc_start "rank$r" 120 -- "${envs[@]}" "${extra[@]}" -- "$net_check" --max-bytes 4M --deadline 100 "$@"
  done
}

api_env() { echo "WEFT_TEST_PSK=$key_a"; }
keyfile_env() { echo "WEFT_TLS_KEY_FILE=$NC_LOGDIR/key_a"; }
wrongkey_env() { if [ "$1" = 3 ]; then echo "WEFT_TEST_PSK=$key_b"; else echo "WEFT_TEST_PSK=$key_a"; fi; }
mixed_env() { if [ "$1" = 3 ]; then echo "WEFT_TEST_PSK="; else echo "WEFT_TEST_PSK=$key_a"; fi; }

# expect_failed_clearly MAX_SECONDS PATTERN: every rank exited 1 (a call failed, no hang) within
# MAX_SECONDS, and some rank's log matches PATTERN.
expect_failed_clearly() {
  local max=$1 pattern=$2 bad=0 i
  for i in "${!NC_NAMES[@]}"; do
    nc_expect "${NC_NAMES[$i]}" 1 || bad=1
    grep -h "FAIL call" "$NC_LOGDIR/${NC_NAMES[$i]}.log" | head -n 1 | cut -c1-400 | sed 's/^/    /'
  done
  if [ $elapsed -gt "$max" ]; then
    echo "  the ranks took $elapsed s to fail (at most $max s)"
    bad=1
  fi
  if grep -l -- "$pattern" "$NC_LOGDIR"/*.log >/dev/null; then
    echo "  found in $(grep -l -- "$pattern" "$NC_LOGDIR"/*.log | xargs -n1 basename | tr '\n' ' '): $(grep -h -- "$pattern" "$NC_LOGDIR"/*.log | head -n 1)"
  else
    echo "  no log says: $pattern"
    for i in "${!NC_NAMES[@]}"; do nc_show_log "${NC_NAMES[$i]}"; done
    bad=1
  fi
  return $bad
}

echo "TLS over loopback: case $case_name, port $port, logs in $NC_LOGDIR"
status=0
t0=$SECONDS
case $case_name in
  api-4x1) start 4 1 api_env --encrypt-env WEFT_TEST_PSK ;;
  keyfile-noshm) start 4 4 keyfile_env ;;
  wrongkey) start 4 1 wrongkey_env --encrypt-env WEFT_TEST_PSK ;;
  mixed) start 4 1 mixed_env --encrypt-env WEFT_TEST_PSK ;;
  nolib)
    nc_start api 60 -- "${common[@]}" RANK=0 WORLD_SIZE=1 WEFT_TLS_LIBSSL=/nonexistent/libssl.so.3 \
      WEFT_TEST_PSK=$key_a -- "$net_check" --encrypt-env WEFT_TEST_PSK --deadline 50
    nc_start keyfile 60 -- NCCL_COMM_ID=127.0.0.1:$(nc_free_port) NCCL_SOCKET_IFNAME=lo WEFT_DEVICE=host RANK=0 \
      WORLD_SIZE=1 WEFT_TLS_LIBSSL=/nonexistent/libssl.so.3 WEFT_TLS_KEY_FILE=$NC_LOGDIR/key_a -- "$net_check" \
      --deadline 50
    ;;
  *) echo "unknown case $case_name" >&2; exit 2 ;;
esac
nc_wait_all
elapsed=$((SECONDS - t0))
echo "  the processes ended after $elapsed s"

case $case_name in
  api-4x1 | keyfile-noshm)
    nc_expect_all_pass || status=1
    # Encrypted for real: every rank says so.
    for f in "$NC_LOGDIR"/rank*.log; do
      grep -q "TLS 1.3 with a pre-shared key encrypts" "$f" || { echo "  $(basename "$f"): no TLS"; status=1; }
    done
    ;;
  wrongkey) expect_failed_clearly 40 "TLS handshake with .* failed" || status=1 ;;
  mixed)
    expect_failed_clearly 40 "TLS handshake with .* failed" || status=1
    # The plaintext rank learns it too, from the root's alert.
    grep -q "the peer sent TLS: it has encryption on, this process has it off" "$NC_LOGDIR/rank3.log" ||
      { echo "  rank3: its error does not say that the root uses TLS"; status=1; }
    ;;
  nolib)
    expect_failed_clearly 30 "cannot load OpenSSL 3 (WEFT_TLS_LIBSSL=/nonexistent/libssl.so.3)" || status=1
    grep -q "cannot load OpenSSL" "$NC_LOGDIR/keyfile.log" || { echo "  keyfile: no message about OpenSSL"; nc_show_log keyfile; status=1; }
    ;;
esac
nc_finish $status "$case_name"
