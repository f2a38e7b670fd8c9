# shellcheck shell=sh
# CMDFILE for lab.sh (meant for pair mode; single mode measures rxe loopback) that measures
# perftest bandwidth and latency over rxe0. The client (single: the one guest) prints one line
# per result, for scripts to grep:
#   LAB-RESULT ib_write_bw bytes=1048576 iters=20 MBps=12.34
#   LAB-RESULT ib_write_lat bytes=8 iters=50 usec_min=.. usec_typical=.. usec_avg=.. usec_p99=..
# The numbers are those of TCG-emulated guests, so they compare runs of the lab, not hardware.
# Iteration counts are small: a round trip between the guests takes tens of milliseconds.
# shellcheck source=/dev/null
. "$LAB_LIB" # lab_retry, lab_pair (lab.sh writes it into the guest)
port=18515
status=0

# run NAME ARGS...: one perftest run on its own TCP port (a port still in TIME_WAIT from the
# previous run could make the next server fail to listen)
run() {
  name=$1
  shift
  port=$((port + 1))
  log=/tmp/$name.$port.log
  if ! lab_pair "$log" "$name" -d "$LAB_DEV" -x "$LAB_GID_INDEX" -p $port -F "$@"; then
    echo "perf[$LAB_ROLE]: FAIL $name $*"
    cat "$log"
    status=1
    return 1
  fi
  grep -E '^ *#bytes|^ *[0-9]+ +[0-9]+ ' "$log"
}

bw() { # bytes iterations
  run ib_write_bw -s "$1" -n "$2" || return
  [ "$LAB_ROLE" = server ] && return
  awk -v s="$1" '$1 == s && NF >= 4 {printf "LAB-RESULT ib_write_bw bytes=%s iters=%s MBps=%s\n", $1, $2, $4}' "$log"
}
lat() { # tool bytes iterations
  run "$1" -s "$2" -n "$3" || return
  [ "$LAB_ROLE" = server ] && return
  grep -q 't_typical' "$log" || { echo "perf[$LAB_ROLE]: FAIL unexpected $1 output"; status=1; return; }
  # columns: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99%
  awk -v s="$2" -v t="$1" '$1 == s && NF >= 8 {
    printf "LAB-RESULT %s bytes=%s iters=%s usec_min=%s usec_typical=%s usec_avg=%s usec_p99=%s\n", t, $1, $2, $3, $5, $6, $8 }' "$log"
}

bw 4096 500
bw 65536 200
bw 1048576 20
lat ib_write_lat 8 50
lat ib_send_lat 8 50
exit $status
