// The random collectives of weft_soak: every rank draws the same sequence from the episode's seed,
// runs each one and checks every element exactly (int32 values small enough that no sum overflows).
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

#include "nccl.h"

namespace soak {

enum class Kind { kAllReduceSum, kAllReduceMax, kAllGather, kReduceScatter, kBroadcast, kReduce, kAlltoAll, kSendRecv };
constexpr int kKinds = 8;

struct Op {
  Kind kind;
  size_t count;  // elements per rank (AllGather, ReduceScatter and AlltoAll: per rank's block)
  int root;
  uint32_t salt;  // varies the data between operations
};

class OpStream {
 public:
  OpStream(uint64_t seed, int nranks) : rng_(seed), nranks_(nranks) {}
  Op next();

 private:
  std::mt19937_64 rng_;
  int nranks_;
};

// Runs op on comm and checks the result. Returns the call's result; *mismatch describes the first
// wrong element (empty when every element is right or the call failed).
ncclResult_t runAndCheck(const Op& op, ncclComm_t comm, int rank, int nranks, std::string* mismatch);
std::string describe(const Op& op);

}  // namespace soak
