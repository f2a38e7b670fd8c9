# shellcheck shell=sh
# Guest command for benchmarks/run_ib_compare.sh (tests/ib/lab/lab.sh pair): in each repetition,
# interleaved, the bound (perftest's ib_write_bw at the largest size, ib_write_lat at 8 B) and
# Weft's AllReduce between the two guests over the IB network and over the Socket network, and
# its SendRecv and Broadcast over IB (one rank per guest). One LAB-RESULT line per measurement: perftest's from the client, Weft's from
# rank 0 in the server.
# Settings through LAB_EXPORT: REPS (3), MAXB (largest message, 4M), ITERS (Weft's timed iterations, 5).
# shellcheck source=/dev/null
. "$LAB_LIB"
reps=${REPS:-3}
maxb=${MAXB:-4M}
iters=${ITERS:-5}
maxbytes=$(echo "$maxb" | awk '/M$/ {print $0 * 1048576; next} /K$/ {print $0 * 1024; next} {print $0}')
port=18600
wport=29600
status=0
server_ip=10.99.0.1
[ "$LAB_ROLE" = server ] && rank=0 || rank=1

perftest() { # name args...
  name=$1
  shift
  port=$((port + 1))
  log=/tmp/$name.$port.log
  lab_pair "$log" "$name" -d "$LAB_DEV" -x "$LAB_GID_INDEX" -p $port -F "$@" || { cat "$log"; status=1; return 1; }
}

# weft TOOL NET REP: one of Weft's perf tools from 8 B to maxb, both guests at once (a fresh
# rendezvous port each time).
weft() {
  wport=$((wport + 1))
  log=/tmp/weft.$1.$2.$wport.log
  RANK=$rank WORLD_SIZE=2 NCCL_COMM_ID=$server_ip:$wport NCCL_SOCKET_IFNAME=eth0 NCCL_NET=$2 WEFT_DEVICE=host \
    WEFT_HOST_ID=$LAB_ROLE timeout 200 "$LAB_BIN/$1" -b 8 -e "$maxb" -f 8 -n "$iters" -w 1 -c 1 \
    > "$log" 2>&1 || { cat "$log"; status=1; return 1; }
  [ "$LAB_ROLE" = server ] || return 0  # rank 0 prints the table
  # all_reduce_perf's rows: size count type redop root time algbw busbw #wrong ... (out-of-place
  # first). The busbw column has two decimals, too few here: the host computes it from the time.
  awk -v tool="$1" -v net="$2" -v rep="$3" '$1 ~ /^[0-9]+$/ && NF >= 8 {
    printf "LAB-RESULT weft tool=%s net=%s rep=%s bytes=%s usec=%s\n", tool, net, rep, $1, $6 }' "$log"
}

r=1
while [ $r -le "$reps" ]; do
  if perftest ib_write_bw -s "$maxbytes" -n 10 && [ "$LAB_ROLE" = client ]; then
    awk -v s="$maxbytes" -v rep=$r '$1 == s && NF >= 4 {printf "LAB-RESULT ib_write_bw rep=%s bytes=%s MBps=%s\n", rep, $1, $4}' "$log"
  fi
  if perftest ib_write_lat -s 8 -n 30 && [ "$LAB_ROLE" = client ]; then
    awk -v rep=$r '$1 == 8 && NF >= 8 {printf "LAB-RESULT ib_write_lat rep=%s bytes=8 usec_typical=%s\n", rep, $5}' "$log"
  fi
  # Both directions at once, as a 2-rank AllReduce or SendRecv moves data (perftest reports the sum).
  if perftest ib_write_bw -b -s "$maxbytes" -n 10 && [ "$LAB_ROLE" = client ]; then
    awk -v s="$maxbytes" -v rep=$r '$1 == s && NF >= 4 {printf "LAB-RESULT ib_write_bw_bidir rep=%s bytes=%s MBps=%s\n", rep, $1, $4}' "$log"
  fi
  weft all_reduce_perf IB $r
  weft all_reduce_perf Socket $r
  weft sendrecv_perf IB $r
  weft broadcast_perf IB $r  # 2 ranks: all data flows one way, as in the one-way bound
  r=$((r + 1))
done
exit $status
