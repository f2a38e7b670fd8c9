# Guest command (lab.sh pair): Weft ranks in both VMs over the IB network (NCCL_NET=IB), started
# through the public API by net_check. Rank 0 runs in the server VM and serves the rendezvous.
# Settings come through LAB_EXPORT:
#   IB_CASE=check    PER ranks per VM run every collective and send/recv with exact checks
#   IB_CASE=killed   one rank per VM; the client's rank dies mid-loop (SIGKILL); the server's rank
#                    must fail with an error that names rank 1, within the link timeout
#   IB_CASE=linkcut  one rank per VM; the client VM takes its link down mid-loop; both ranks must
#                    fail with an error (not hang)
#   PER (1), MAXB (largest message, 64K), HCA (NCCL_IB_HCA, unset)
case_name=${IB_CASE:-check}
per=${PER:-1}
case $LAB_ROLE in
  server) base=0 ;;
  client) base=$per ;;
  *) echo "ranks.sh needs pair mode"; exit 2 ;;
esac
nranks=$((per * 2))
export NCCL_COMM_ID=$LAB_PEER:29500 NCCL_SOCKET_IFNAME=eth0 NCCL_NET=IB WEFT_DEVICE=host WORLD_SIZE=$nranks
[ "$LAB_ROLE" = server ] && export NCCL_COMM_ID=$LAB_ME:29500
export WEFT_HOST_ID=$LAB_ROLE NCCL_DEBUG=WARN WEFT_NET_LINK_TIMEOUT_MS=5000 WEFT_TIMEOUT_MS=15000
# Short transport retries, so that a dead link surfaces in about a second, not NCCL's 30 s.
export NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=3
[ -n "${HCA:-}" ] && export NCCL_IB_HCA=$HCA

args_for() { # rank -> net_check arguments
  case $case_name in
    check) echo "--max-bytes ${MAXB:-64K} --deadline 200" ;;
    killed) [ "$1" = 1 ] && echo "--die-after 30 --loop-count 4096" || echo "--until-error 90 --loop-count 4096" ;;
    linkcut) echo "--until-error 90 --loop-count 4096" ;;
  esac
}

pids=""
for i in $(seq 0 $((per - 1))); do
  r=$((base + i))
  RANK=$r timeout 240 "$LAB_BIN/net_check" $(args_for $r) > /tmp/rank$r.log 2>&1 &
  pids="$pids $!"
done
if [ "$case_name" = linkcut ] && [ "$LAB_ROLE" = client ]; then
  # Cut once the loop is running: the first AllReduce iterations have printed nothing yet, so wait
  # for the rendezvous to finish and a few seconds of traffic.
  sleep 12
  echo "cutting eth0"
  /sbin/ip link set eth0 down
fi
status=0
for p in $pids; do wait "$p" || status=1; done
for i in $(seq 0 $((per - 1))); do
  r=$((base + i))
  echo "---- rank $r"
  grep -E "SUMMARY|FAIL|ERROR-REPORTED|rror" /tmp/rank$r.log | head -20
done
case $case_name in
  check) for i in $(seq 0 $((per - 1))); do grep -q " 0 failed" /tmp/rank$((base + i)).log || status=1; done ;;
  killed)
    if [ "$LAB_ROLE" = server ]; then
      grep -q "ERROR-REPORTED" /tmp/rank0.log || { echo "rank 0 reported no error"; status=1; }
      grep "ERROR-REPORTED" /tmp/rank0.log | grep -q "rank 1" || { echo "rank 0's error does not name rank 1"; status=1; }
    else
      status=0  # rank 1 killed itself: its status is 137 by design
    fi ;;
  linkcut) grep -q "ERROR-REPORTED" /tmp/rank$base.log || { echo "rank $base reported no error"; status=1; } ;;
esac
exit $status
