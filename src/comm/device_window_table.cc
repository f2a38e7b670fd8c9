#include "comm/device_window_table.h"

#include "runtime/device_runtime.h"

namespace weft {

DeviceWindowTable::~DeviceWindowTable() {
  if (table_ != nullptr) dev::runtime().deviceFree(table_);
}

int DeviceWindowTable::claim(std::string* why) {
  if (table_ == nullptr) {
    void* p = nullptr;
    const size_t bytes = size_t(kRows) * size_t(nranks_) * sizeof(uint64_t);
    if (dev::runtime().deviceAlloc(&p, bytes) != ncclSuccess) {  // zero-filled: no row resolves
      *why = "cannot allocate the " + std::to_string(bytes) + "-byte device window table";
      return -1;
    }
    table_ = static_cast<uint64_t*>(p);
  }
  for (int row = 0; row < kRows; ++row)
    if (!used_[size_t(row)]) {
      used_[size_t(row)] = true;
      return row;
    }
  *why = "all " + std::to_string(kRows) + " rows of the device window table are taken";
  return -1;
}

ncclResult_t DeviceWindowTable::fill(int row, const std::vector<uint64_t>& addresses, std::string* why) {
  if (dev::runtime().copy(table_ + size_t(row) * size_t(nranks_), addresses.data(),
                          size_t(nranks_) * sizeof(uint64_t)) != ncclSuccess) {
    *why = "cannot write row " + std::to_string(row) + " of the device window table";
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

void DeviceWindowTable::release(int row) {
  if (row < 0 || row >= kRows || !used_[size_t(row)]) return;
  const std::vector<uint64_t> zeros(size_t(nranks_), 0);
  dev::runtime().copy(table_ + size_t(row) * size_t(nranks_), zeros.data(), zeros.size() * sizeof(uint64_t));
  used_[size_t(row)] = false;
}

}  // namespace weft
