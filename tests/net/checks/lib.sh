# Shared by run_loopback.sh and netns_test.sh (sourced, not run): start ranks as background
# processes, each under a hard `timeout`, with its output in a log file of its own; wait for them
# all; judge their exit codes; show the logs of the ones that failed.

NC_LOGDIR=""
NC_PIDS=()
NC_NAMES=()
NC_RCS=()

nc_init_logs() {
  NC_LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/weft-netcheck.XXXXXX")
  NC_PIDS=()
  NC_NAMES=()
  NC_RCS=()
}

# A TCP port nothing listens on now (the kernel picks it; rank 0 binds it a moment later).
nc_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# nc_start NAME SECONDS PREFIX... -- ENV... -- COMMAND...
#   PREFIX: what runs the command (e.g. `ip netns exec ns`), may be empty;
#   ENV: NAME=VALUE settings for the process. The process gets SIGTERM after SECONDS, SIGKILL 5 s later.
nc_start() {
  local name=$1 secs=$2
  shift 2
  local prefix=()
  while [ "$1" != "--" ]; do prefix+=("$1"); shift; done
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  "${prefix[@]}" env "${envs[@]}" timeout -k 5 "$secs" "$@" >"$NC_LOGDIR/$name.log" 2>&1 &
  NC_PIDS+=($!)
  NC_NAMES+=("$name")
}

# Waits for every started process; NC_RCS[i] gets process i's exit code.
nc_wait_all() {
  local i
  NC_RCS=()
  for i in "${!NC_PIDS[@]}"; do
    local rc=0
    wait "${NC_PIDS[$i]}" 2>/dev/null || rc=$?
    NC_RCS[$i]=$rc
  done
}

nc_rc_meaning() {
  case $1 in
    0) echo "ok" ;;
    1) echo "checks failed" ;;
    2) echo "bad usage" ;;
    3) echo "its watchdog fired (a hang)" ;;
    124) echo "killed by timeout (a hang)" ;;
    137) echo "killed by SIGKILL" ;;
    *) echo "exit code $1" ;;
  esac
}

nc_show_log() {
  local name=$1
  echo "---- $name (last 40 lines of $NC_LOGDIR/$name.log) ----"
  tail -n 40 "$NC_LOGDIR/$name.log"
}

# nc_expect NAME WANT_RC: 0 when process NAME exited with WANT_RC; otherwise prints why and its log.
nc_expect() {
  local name=$1 want=$2 i
  for i in "${!NC_NAMES[@]}"; do
    [ "${NC_NAMES[$i]}" = "$name" ] || continue
    local rc=${NC_RCS[$i]}
    if [ "$rc" = "$want" ]; then
      echo "  $name: exit $rc ($(nc_rc_meaning "$rc")) as expected"
      return 0
    fi
    echo "  $name: exit $rc ($(nc_rc_meaning "$rc")), expected $want ($(nc_rc_meaning "$want"))"
    nc_show_log "$name"
    return 1
  done
  echo "  $name: no such process"
  return 1
}

# Prints every check-mode process's summary line and returns non-zero unless all exited 0.
nc_expect_all_pass() {
  local bad=0 i
  for i in "${!NC_NAMES[@]}"; do
    local name=${NC_NAMES[$i]}
    local summary
    summary=$(grep -h "SUMMARY" "$NC_LOGDIR/$name.log" | tail -n 1)
    echo "  $name: exit ${NC_RCS[$i]} ($(nc_rc_meaning "${NC_RCS[$i]}")) ${summary#*SUMMARY }"
    if [ "${NC_RCS[$i]}" != 0 ]; then
      bad=1
      grep -h " FAIL " "$NC_LOGDIR/$name.log" | head -n 20
      nc_show_log "$name"
    fi
  done
  return $bad
}

# Waits up to SECONDS until every log contains PATTERN; non-zero (naming the laggards) otherwise.
nc_wait_logs_for() {
  local pattern=$1 secs=$2 deadline=$((SECONDS + $2)) name missing
  while :; do
    missing=()
    for name in "${NC_NAMES[@]}"; do
      grep -q "$pattern" "$NC_LOGDIR/$name.log" 2>/dev/null || missing+=("$name")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ $SECONDS -ge $deadline ]; then
      echo "  not seen within $secs s in the output of: ${missing[*]} (pattern: $pattern)"
      return 1
    fi
    sleep 0.2
  done
}

# nc_error_names_rank NAME RANK: process NAME's ERROR-REPORTED line mentions "rank RANK".
nc_error_names_rank() {
  grep -h "ERROR-REPORTED" "$NC_LOGDIR/$1.log" | head -n 1 | grep -Eq "rank $2([^0-9]|\$)"
}

# nc_check_error_report NAME MAX_MS: process NAME printed an ERROR-REPORTED line that came at
# most MAX_MS after the event.
nc_check_error_report() {
  local name=$1 max_ms=$2 line ms
  line=$(grep -h "ERROR-REPORTED" "$NC_LOGDIR/$name.log" | head -n 1)
  if [ -z "$line" ]; then
    echo "  $name: no ERROR-REPORTED line"
    nc_show_log "$name"
    return 1
  fi
  echo "  $name: ${line#*ERROR-REPORTED }"
  ms=$(echo "$line" | sed -n 's/.* \([0-9][0-9]*\) ms after the event.*/\1/p')
  if [ -z "$ms" ]; then
    echo "  $name: the report carries no time since the event"
    return 1
  fi
  if [ "$ms" -gt "$max_ms" ]; then
    echo "  $name: the error came $ms ms after the event, more than the $max_ms ms allowed"
    return 1
  fi
  return 0
}

# nc_finish STATUS CASE: prints the verdict, removes the logs of a passing run (a failing one keeps
# them for reading) and exits with STATUS.
nc_finish() {
  if [ "$1" = 0 ]; then
    echo "PASS: case $2"
    rm -rf "$NC_LOGDIR"
  else
    echo "FAIL: case $2 (logs kept in $NC_LOGDIR)"
  fi
  exit "$1"
}

# Each started pid is a `timeout` (the prefix and env exec into it), which leads a process group
# of its own: killing the group takes net_check with it.
nc_kill_all() {
  local pid
  for pid in "${NC_PIDS[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
}
