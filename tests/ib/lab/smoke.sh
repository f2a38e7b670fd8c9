# shellcheck shell=sh
# CMDFILE for lab.sh (either mode) that checks the lab itself: rxe0 is listed and its port is
# ACTIVE, and verbs traffic flows: ibv_rc_pingpong over rxe loopback in single mode, ib_write_bw
# between the two guests in pair mode.
# shellcheck source=/dev/null
. "$LAB_LIB" # lab_retry, lab_pair (lab.sh writes it into the guest)
fail() {
  echo "smoke[$LAB_ROLE]: FAIL $*"
  exit 1
}
ok() { echo "smoke[$LAB_ROLE]: ok $*"; }

ibv_devices
ibv_devices | grep -qw "$LAB_DEV" || fail "ibv_devices does not list $LAB_DEV"
ok "ibv_devices lists $LAB_DEV"
ibv_devinfo -d "$LAB_DEV" | grep -E 'hca_id|state|active_mtu|link_layer'
ibv_devinfo -d "$LAB_DEV" | grep -q PORT_ACTIVE || fail "port 1 of $LAB_DEV is not ACTIVE"
ok "port ACTIVE"
echo "GID[$LAB_GID_INDEX] $(cat /sys/class/infiniband/$LAB_DEV/ports/1/gids/$LAB_GID_INDEX)"

if [ "$LAB_ROLE" = single ]; then
  lab_pair /tmp/pp.log ibv_rc_pingpong -d "$LAB_DEV" -g "$LAB_GID_INDEX" -n 200 || {
    cat /tmp/pp.log /tmp/pp.log.server
    fail ibv_rc_pingpong
  }
  grep -E 'bytes in|iters in' /tmp/pp.log
  ok ibv_rc_pingpong
else
  # -F: no warning about the CPU frequency, which a TCG guest cannot report
  lab_pair /tmp/bw.log ib_write_bw -d "$LAB_DEV" -x "$LAB_GID_INDEX" -s 65536 -n 200 -F || {
    cat /tmp/bw.log
    fail ib_write_bw
  }
  grep -E '^ *#bytes|^ *65536 ' /tmp/bw.log
  ok ib_write_bw
fi
