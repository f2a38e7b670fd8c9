#include "tensor_ops.h"

#include <ATen/ATen.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "weft/weft.h"
#include "weft_engine.h"

namespace weft_torch {
namespace {

// torch's bool tensors travel as bytes. A reduction keeps them 0 or 1 only as MAX (logical or,
// which is also what adding bool tensors gives in torch) or MIN (logical and, torch's product).
bool isBool(at::ScalarType s) { return s == at::kBool; }

ncclDataType_t weftType(at::ScalarType s, const char* op) {
  switch (s) {
    case at::kFloat: return ncclFloat32;
    case at::kDouble: return ncclFloat64;
    case at::kHalf: return ncclFloat16;
    case at::kBFloat16: return ncclBfloat16;
    case at::kChar: return ncclInt8;
    case at::kByte:
    case at::kBool: return ncclUint8;
    case at::kInt: return ncclInt32;
    case at::kLong: return ncclInt64;
#ifdef WEFT_HAS_COMPLEX
    case at::kComplexFloat: return weftComplex64;
    case at::kComplexDouble: return weftComplex128;
#endif
    default:
      throw std::runtime_error(std::string("weft: ") + op + ": tensors of type " + c10::toString(s) +
                               " are not supported (float32/64, float16, bfloat16, int8, uint8, int32, int64, bool"
#ifdef WEFT_HAS_COMPLEX
                               ", complex64, complex128"
#endif
                               ")");
  }
}

const char* redName(RedKind k) {
  switch (k) {
    case RedKind::kSum: return "SUM";
    case RedKind::kProd: return "PRODUCT";
    case RedKind::kMin: return "MIN";
    case RedKind::kMax: return "MAX";
    case RedKind::kAvg: return "AVG";
    case RedKind::kPreMulSum: return "PREMUL_SUM";
  }
  return "?";
}

ncclRedOp_t builtinOp(RedKind k, at::ScalarType s) {
  if (isBool(s)) return (k == RedKind::kSum || k == RedKind::kMax) ? ncclMax : ncclMin;
  switch (k) {
    case RedKind::kSum: return ncclSum;
    case RedKind::kProd: return ncclProd;
    case RedKind::kMin: return ncclMin;
    case RedKind::kMax: return ncclMax;
    case RedKind::kAvg: return ncclAvg;
    case RedKind::kPreMulSum: break;
  }
  throw std::logic_error("weft: PREMUL_SUM has no built-in operator");
}

// The operator for one call; a PREMUL_SUM operator is made on the communicator and destroyed when
// the call is over.
class OpHandle {
 public:
  OpHandle(ncclComm_t comm, const Reduction& r, at::ScalarType s, const char* what) : comm_(comm) {
    if (r.kind != RedKind::kPreMulSum) {
      op_ = builtinOp(r.kind, s);
      return;
    }
    // The scalar in the tensors' own type, read by Weft before the create call returns.
    at::Tensor scalar = r.factorTensor.defined() ? r.factorTensor.detach().to(at::kCPU).to(s).reshape({1}).contiguous()
                                                 : at::full({1}, r.factor, at::TensorOptions().dtype(s));
    check(ncclRedOpCreatePreMulSum(&op_, scalar.data_ptr(), weftType(s, what), ncclScalarHostImmediate, comm), comm,
          what);
    made_ = true;
  }
  ~OpHandle() {
    if (made_) ncclRedOpDestroy(op_, comm_);
  }
  OpHandle(const OpHandle&) = delete;
  OpHandle& operator=(const OpHandle&) = delete;
  ncclRedOp_t get() const { return op_; }

 private:
  ncclComm_t comm_;
  ncclRedOp_t op_ = ncclSum;
  bool made_ = false;
};

int nranksOf(ncclComm_t comm) {
  int n = 0;
  check(ncclCommCount(comm, &n), comm, "ncclCommCount");
  return n;
}

int rankOf(ncclComm_t comm) {
  int r = 0;
  check(ncclCommUserRank(comm, &r), comm, "ncclCommUserRank");
  return r;
}

// Brackets a group of Weft calls; the group ends (and runs) even when a call inside throws, so
// the thread's group state never leaks into the next operation.
class Group {
 public:
  explicit Group(ncclComm_t comm) : comm_(comm) { check(ncclGroupStart(), comm, "ncclGroupStart"); }
  void end(const char* what) {
    open_ = false;
    check(ncclGroupEnd(), comm_, what);
  }
  ~Group() {
    if (open_) ncclGroupEnd();
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

 private:
  ncclComm_t comm_;
  bool open_ = true;
};

size_t count(const at::Tensor& t) { return static_cast<size_t>(t.numel()); }

}  // namespace

void checkTensor(const at::Tensor& t, const char* op) {
  if (!t.defined()) throw std::runtime_error(std::string("weft: ") + op + ": undefined tensor");
  if (!t.device().is_cpu())
    throw std::runtime_error(std::string("weft backend serves CPU tensors; ") + op + " got a tensor on " +
                             t.device().str());
  if (t.layout() != at::kStrided)
    throw std::runtime_error(std::string("weft: ") + op + ": only dense (strided) tensors are supported");
  weftType(t.scalar_type(), op);
}

void checkReduction(const Reduction& r, at::ScalarType s, const char* op) {
  if (isBool(s) && (r.kind == RedKind::kAvg || r.kind == RedKind::kPreMulSum))
    throw std::runtime_error(
        std::string("weft: ") + op + ": ReduceOp " + redName(r.kind) +
        " is not defined for bool tensors (SUM/MAX act as logical or, PRODUCT/MIN as logical and)");
  if (r.kind == RedKind::kPreMulSum && r.factorTensor.defined() && r.factorTensor.numel() != 1)
    throw std::runtime_error(std::string("weft: ") + op + ": PREMUL_SUM's factor must be a one-element tensor, got " +
                             std::to_string(r.factorTensor.numel()) + " elements");
}

at::Tensor contiguousOf(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

void copyBack(const at::Tensor& user, const at::Tensor& buffer) {
  if (!user.is_same(buffer)) user.copy_(buffer);
}

void allReduce(ncclComm_t comm, const std::vector<at::Tensor>& tensors, const Reduction& r) {
  // One group for all tensors: Weft runs them as one batch, in this order on every rank.
  Group group(comm);
  std::vector<std::unique_ptr<OpHandle>> ops;
  for (const at::Tensor& t : tensors) {
    ops.push_back(std::make_unique<OpHandle>(comm, r, t.scalar_type(), "all_reduce"));
    check(ncclAllReduce(t.data_ptr(), t.data_ptr(), count(t), weftType(t.scalar_type(), "all_reduce"),
                        ops.back()->get(), comm, nullptr),
          comm, "all_reduce");
  }
  group.end("all_reduce");
}

void broadcast(ncclComm_t comm, const at::Tensor& t, int root) {
  check(ncclBroadcast(t.data_ptr(), t.data_ptr(), count(t), weftType(t.scalar_type(), "broadcast"), root, comm,
                      nullptr),
        comm, "broadcast");
}

void reduce(ncclComm_t comm, const at::Tensor& t, const Reduction& r, int root) {
  OpHandle op(comm, r, t.scalar_type(), "reduce");
  check(ncclReduce(t.data_ptr(), t.data_ptr(), count(t), weftType(t.scalar_type(), "reduce"), op.get(), root, comm,
                   nullptr),
        comm, "reduce");
}

void allGather(ncclComm_t comm, const at::Tensor& in, const at::Tensor& out) {
  check(ncclAllGather(in.data_ptr(), out.data_ptr(), count(in), weftType(in.scalar_type(), "all_gather"), comm,
                      nullptr),
        comm, "all_gather");
}

void reduceScatter(ncclComm_t comm, const at::Tensor& in, const at::Tensor& out, const Reduction& r) {
  OpHandle op(comm, r, in.scalar_type(), "reduce_scatter");
  check(ncclReduceScatter(in.data_ptr(), out.data_ptr(), count(out), weftType(in.scalar_type(), "reduce_scatter"),
                          op.get(), comm, nullptr),
        comm, "reduce_scatter");
}

void allToAllSingle(ncclComm_t comm, const at::Tensor& in, const at::Tensor& out, const std::vector<int64_t>& outSplits,
                    const std::vector<int64_t>& inSplits) {
  const int n = nranksOf(comm);
  const int me = rankOf(comm);
  const ncclDataType_t type = weftType(in.scalar_type(), "all_to_all");
  if (outSplits.empty() && inSplits.empty()) {
    // Equal shares: Weft's AlltoAll, which reads the whole input before it writes; an output
    // that is the input needs a copy of it first.
    at::Tensor src = in.is_same(out) || in.data_ptr() == out.data_ptr() ? in.clone() : in;
    check(ncclAlltoAll(src.data_ptr(), out.data_ptr(), count(in) / n, type, comm, nullptr), comm, "all_to_all");
    return;
  }
  // Rows of dim 0: a split of k rows moves k * rowElems elements.
  const size_t inRow = in.dim() > 0 && in.size(0) > 0 ? count(in) / in.size(0) : 0;
  const size_t outRow = out.dim() > 0 && out.size(0) > 0 ? count(out) / out.size(0) : 0;
  const size_t elem = in.element_size();
  auto* src = static_cast<char*>(in.data_ptr());
  auto* dst = static_cast<char*>(out.data_ptr());
  std::vector<size_t> inOff(n + 1, 0);
  std::vector<size_t> outOff(n + 1, 0);
  for (int p = 0; p < n; ++p) {
    const int64_t inRows = inSplits.empty() ? in.size(0) / n : inSplits[p];
    const int64_t outRows = outSplits.empty() ? out.size(0) / n : outSplits[p];
    inOff[p + 1] = inOff[p] + inRows * inRow;
    outOff[p + 1] = outOff[p] + outRows * outRow;
  }
  Group group(comm);
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;  // this rank's own share is a local copy, below
    const size_t sendCount = inOff[p + 1] - inOff[p];
    const size_t recvCount = outOff[p + 1] - outOff[p];
    if (sendCount > 0) check(ncclSend(src + inOff[p] * elem, sendCount, type, p, comm, nullptr), comm, "all_to_all");
    if (recvCount > 0) check(ncclRecv(dst + outOff[p] * elem, recvCount, type, p, comm, nullptr), comm, "all_to_all");
  }
  group.end("all_to_all");
  const size_t selfCount = inOff[me + 1] - inOff[me];
  if (selfCount != outOff[me + 1] - outOff[me])
    throw std::runtime_error("weft: all_to_all: this rank sends itself " + std::to_string(selfCount) +
                             " elements but expects " + std::to_string(outOff[me + 1] - outOff[me]));
  std::memmove(dst + outOff[me] * elem, src + inOff[me] * elem, selfCount * elem);
}

void allToAllList(ncclComm_t comm, const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins) {
  const int me = rankOf(comm);
  const int n = static_cast<int>(ins.size());
  Group group(comm);
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    const at::Tensor& i = ins[p];
    const at::Tensor& o = outs[p];
    if (i.numel() > 0)
      check(ncclSend(i.data_ptr(), count(i), weftType(i.scalar_type(), "all_to_all"), p, comm, nullptr), comm,
            "all_to_all");
    if (o.numel() > 0)
      check(ncclRecv(o.data_ptr(), count(o), weftType(o.scalar_type(), "all_to_all"), p, comm, nullptr), comm,
            "all_to_all");
  }
  group.end("all_to_all");
  outs[me].copy_(ins[me].view_as(outs[me]));
}

void send(ncclComm_t comm, const at::Tensor& t, int peer) {
  check(ncclSend(t.data_ptr(), count(t), weftType(t.scalar_type(), "send"), peer, comm, nullptr), comm, "send");
}

void recv(ncclComm_t comm, const at::Tensor& t, int peer) {
  check(ncclRecv(t.data_ptr(), count(t), weftType(t.scalar_type(), "recv"), peer, comm, nullptr), comm, "recv");
}

void barrier(ncclComm_t comm) {
  // A one-element AllReduce: no rank leaves before every rank has arrived.
  int32_t token = 0;
  check(ncclAllReduce(&token, &token, 1, ncclInt32, ncclSum, comm, nullptr), comm, "barrier");
}

}  // namespace weft_torch
