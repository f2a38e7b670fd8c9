// User-defined reduction operators (ncclRedOpCreatePreMulSum) of one communicator. Their ids start
// at ncclNumOps, as in NCCL.
#pragma once
#include <cstdint>
#include <mutex>
#include <vector>

#include "nccl.h"

namespace weft {

struct UserRedOp {
  bool live = false;
  ncclDataType_t dtype = ncclFloat32;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  uint64_t scalarBits = 0;          // host-immediate: the value, captured at creation
  uint64_t scalarBitsHi = 0;        // its bytes past the first 8 (a complex128 scalar)
  const void* scalarPtr = nullptr;  // "device" residence: read when the operation runs
};

class RedOpTable {
 public:
  ncclRedOp_t create(const UserRedOp& op) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < ops_.size(); ++i)
      if (!ops_[i].live) {
        ops_[i] = op;
        ops_[i].live = true;
        return static_cast<ncclRedOp_t>(ncclNumOps + i);
      }
    ops_.push_back(op);
    ops_.back().live = true;
    return static_cast<ncclRedOp_t>(ncclNumOps + ops_.size() - 1);
  }
  bool lookup(ncclRedOp_t id, UserRedOp* out) const {
    std::lock_guard<std::mutex> lock(mutex_);
    long i = static_cast<long>(id) - ncclNumOps;
    if (i < 0 || i >= static_cast<long>(ops_.size()) || !ops_[i].live) return false;
    *out = ops_[i];
    return true;
  }
  bool destroy(ncclRedOp_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    long i = static_cast<long>(id) - ncclNumOps;
    if (i < 0 || i >= static_cast<long>(ops_.size()) || !ops_[i].live) return false;
    ops_[i].live = false;
    return true;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<UserRedOp> ops_;
};

}  // namespace weft
