// The device window table of a GPU communicator whose local ranks live in several processes: one
// row per shared window (rma/device_window.h), holding every rank's window buffer as this process
// addresses it (its own, and the IPC mappings of the others'), in device memory. A rank that
// publishes an input in a window names the row (program/step.h kPublishedWindow); the DDA kernel
// of each peer reads the publisher's address from its own table (gpu_executor/direct_kernel.h).
//
// Rows are claimed at registration, which is collective and issued in the same order on every rank,
// so the same window gets the same row everywhere (the exchange still checks it).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

namespace weft {

class DeviceWindowTable {
 public:
  // At most this many windows of a communicator are shared at once; the others are staged.
  static constexpr int kRows = 64;

  explicit DeviceWindowTable(int nranks) : nranks_(nranks), used_(kRows, false) {}
  ~DeviceWindowTable();
  DeviceWindowTable(const DeviceWindowTable&) = delete;
  DeviceWindowTable& operator=(const DeviceWindowTable&) = delete;

  // The lowest free row, or -1 when all are taken or the table cannot be allocated (*why).
  int claim(std::string* why);
  // Writes a claimed row: addresses[q] is rank q's buffer here (0: not mapped).
  ncclResult_t fill(int row, const std::vector<uint64_t>& addresses, std::string* why);
  // Zeroes the row and frees it.
  void release(int row);

  // Device memory: kRows rows of nranks addresses (null until the first claim).
  const uint64_t* device() const { return table_; }

 private:
  int nranks_;
  std::vector<bool> used_;
  uint64_t* table_ = nullptr;
};

}  // namespace weft
