// Tensor collectives over Weft's C API, the same for every torch API generation: each function
// checks its tensors, runs one blocking Weft call (or one group of calls) and throws with Weft's
// message on failure. They run on the engine's worker thread; the process-group classes only
// translate torch's options into these calls.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "nccl.h"

namespace weft_torch {

enum class RedKind { kSum, kProd, kMin, kMax, kAvg, kPreMulSum };

// A reduction as torch names it, minus torch's types. PREMUL_SUM's factor is either a number or a
// one-element tensor.
struct Reduction {
  RedKind kind = RedKind::kSum;
  double factor = 1.0;
  at::Tensor factorTensor;
};

// Issue-time checks (on the caller's thread, so a bad call raises before anything is queued).
void checkTensor(const at::Tensor& t, const char* op);
void checkReduction(const Reduction& r, at::ScalarType type, const char* op);

// A dense copy when t is not contiguous (as gloo does), t itself otherwise; copyBack writes the
// result into the caller's tensor when the two differ.
at::Tensor contiguousOf(const at::Tensor& t);
void copyBack(const at::Tensor& user, const at::Tensor& buffer);

void allReduce(ncclComm_t comm, const std::vector<at::Tensor>& tensors, const Reduction& r);
void broadcast(ncclComm_t comm, const at::Tensor& t, int root);
void reduce(ncclComm_t comm, const at::Tensor& t, const Reduction& r, int root);
// out holds nranks * in.numel() elements: rank i's input lands at i * in.numel().
void allGather(ncclComm_t comm, const at::Tensor& in, const at::Tensor& out);
// in holds nranks * out.numel() elements; out receives this rank's reduced share.
void reduceScatter(ncclComm_t comm, const at::Tensor& in, const at::Tensor& out, const Reduction& r);
// Splits count rows of dim 0 (torch's all_to_all_single); empty splits mean equal shares.
void allToAllSingle(ncclComm_t comm, const at::Tensor& in, const at::Tensor& out, const std::vector<int64_t>& outSplits,
                    const std::vector<int64_t>& inSplits);
void allToAllList(ncclComm_t comm, const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins);
void send(ncclComm_t comm, const at::Tensor& t, int peer);
void recv(ncclComm_t comm, const at::Tensor& t, int peer);
void barrier(ncclComm_t comm);

}  // namespace weft_torch
