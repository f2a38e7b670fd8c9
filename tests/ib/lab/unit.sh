# Guest command (lab.sh single): the IB network's own tests (ib_net_test) against rxe0. None may
# skip here: a skip would mean the guest has no usable RDMA device.
cd /tmp || exit 1
"$LAB_BIN/ib_net_test" --gtest_color=no > /tmp/ib_net_test.log 2>&1
status=$?
cat /tmp/ib_net_test.log
if grep -q "SKIPPED" /tmp/ib_net_test.log; then
  echo "tests were skipped: the guest has no usable RDMA device"
  status=1
fi
exit $status
