// The torch 1.13 generation of the backend: a c10d::ProcessGroup subclass, its Work, and the
// Python module weft._weft_torch that creates it. torch 2.x moved backends to c10d::Backend; a
// file beside this one would hold that form and share weft_engine and tensor_ops with it. Only
// 1.13 (Debian's libtorch) has been built.
#include <torch/python.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tensor_ops.h"
#include "weft/weft.h"
#include "weft_engine.h"

namespace weft_torch {
namespace {

using Clock = std::chrono::steady_clock;
using c10d::OpType;

// One operation's handle. The worker completes it; wait() enforces the deadline.
class WorkWeft : public c10d::Work {
 public:
  WorkWeft(const std::shared_ptr<Engine>& engine, OpType type, std::string name, std::vector<at::Tensor> outputs,
           std::chrono::milliseconds limit)
      : c10d::Work(engine->rank(), type), engine_(engine), name_(std::move(name)), outputs_(std::move(outputs)),
        limit_(limit), deadline_(Clock::now() + limit),
        future_(c10::make_intrusive<at::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

  void setSeq(uint64_t seq) { seq_.store(seq); }

  // Runs on the worker thread when the operation is over.
  void complete(std::exception_ptr error) {
    finish(error);
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(outputs_));
    }
  }

  bool wait(std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool ownLimit = timeout != kNoTimeout;
    const auto deadline = ownLimit ? Clock::now() + timeout : deadline_;
    if (!cv_.wait_until(lock, deadline, [this] { return completed_; })) {
      lock.unlock();
      std::string msg = "weft: " + name_ + " (operation " + std::to_string(seq_.load()) +
                        " of this process group) did not finish within " +
                        std::to_string((ownLimit ? timeout : limit_).count()) + " ms";
      // The process group's own timeout declares the operation lost, as NCCL's process group
      // does: the communicator is revoked so the worker stops waiting, and later operations
      // raise. A shorter limit given to wait() only reports.
      if (!ownLimit) {
        msg += "; the process group has failed and its later operations raise";
        if (auto engine = engine_.lock()) engine->fail(msg);
      }
      throw std::runtime_error(msg);
    }
    if (exception_) std::rethrow_exception(exception_);
    return true;
  }

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  // Weak: the process group owns the engine, so the engine never ends on its own worker thread.
  std::weak_ptr<Engine> engine_;
  std::string name_;
  std::vector<at::Tensor> outputs_;
  std::chrono::milliseconds limit_;
  Clock::time_point deadline_;
  std::atomic<uint64_t> seq_{0};
  c10::intrusive_ptr<at::ivalue::Future> future_;
};

[[noreturn]] void usage(const std::string& msg) { throw std::invalid_argument("weft: " + msg); }

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* op) {
  if (tensors.size() != 1)
    usage(std::string(op) + " takes one tensor per call on CPU, got " + std::to_string(tensors.size()));
  checkTensor(tensors[0], op);
  return tensors[0];
}

void sameKind(const at::Tensor& a, const at::Tensor& b, const char* op) {
  checkTensor(b, op);
  if (a.scalar_type() != b.scalar_type())
    usage(std::string(op) + ": tensors of types " + c10::toString(a.scalar_type()) + " and " +
          c10::toString(b.scalar_type()) + " cannot be mixed");
}

Reduction toReduction(const c10d::ReduceOp& op, const char* name) {
  Reduction r;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: r.kind = RedKind::kSum; break;
    case c10d::ReduceOp::PRODUCT: r.kind = RedKind::kProd; break;
    case c10d::ReduceOp::MIN: r.kind = RedKind::kMin; break;
    case c10d::ReduceOp::MAX: r.kind = RedKind::kMax; break;
    case c10d::ReduceOp::AVG: r.kind = RedKind::kAvg; break;
    case c10d::ReduceOp::PREMUL_SUM: {
      r.kind = RedKind::kPreMulSum;
      auto* factor = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      if (factor == nullptr) usage(std::string(name) + ": PREMUL_SUM without a factor");
      r.factor = factor->double_factor;
      if (!factor->tensor_factors.empty()) r.factorTensor = factor->tensor_factors[0];
      break;
    }
    default: usage(std::string(name) + ": bitwise reductions (BAND, BOR, BXOR) are not supported: NCCL's API has none");
  }
  return r;
}

class ProcessGroupWeft : public c10d::ProcessGroup {
 public:
  ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout)
      : c10d::ProcessGroup(rank, size), timeout_(timeout) {
    // Rank 0 makes the communicator's unique id and publishes it in the group's store (a
    // PrefixStore of its own per group); the other ranks wait for it up to the group's timeout.
    static const std::string kKey = "weft_unique_id";
    ncclUniqueId id;
    if (rank == 0) {
      check(ncclGetUniqueId(&id), nullptr, "ncclGetUniqueId");
      std::vector<uint8_t> bytes(sizeof(id));
      std::memcpy(bytes.data(), &id, sizeof(id));
      store->set(kKey, bytes);
    } else {
      store->wait({kKey}, timeout);
      std::vector<uint8_t> bytes = store->get(kKey);
      if (bytes.size() != sizeof(id))
        usage("the store's unique id has " + std::to_string(bytes.size()) + " bytes, expected " +
              std::to_string(sizeof(id)));
      std::memcpy(&id, bytes.data(), sizeof(id));
    }
    engine_ = std::make_shared<Engine>(rank, size, id);
  }

  const std::string getBackendName() const override { return "weft"; }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    const at::Tensor& t = single(tensors, "all_reduce");
    Reduction r = toReduction(opts.reduceOp, "all_reduce");
    checkReduction(r, t.scalar_type(), "all_reduce");
    at::Tensor buf = contiguousOf(t);
    return enqueue(OpType::ALLREDUCE, "all_reduce", tensors, opts.timeout, [t, buf, r](ncclComm_t comm) {
      allReduce(comm, {buf}, r);
      copyBack(t, buf);
    });
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override {
    Reduction r = toReduction(opts.reduceOp, "all_reduce_coalesced");
    std::vector<at::Tensor> bufs;
    for (const at::Tensor& t : tensors) {
      checkTensor(t, "all_reduce_coalesced");
      checkReduction(r, t.scalar_type(), "all_reduce_coalesced");
      bufs.push_back(contiguousOf(t));
    }
    return enqueue(OpType::ALLREDUCE_COALESCED, "all_reduce_coalesced", tensors, opts.timeout,
                   [tensors, bufs, r](ncclComm_t comm) {
                     allReduce(comm, bufs, r);
                     for (size_t i = 0; i < tensors.size(); ++i) copyBack(tensors[i], bufs[i]);
                   });
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    const at::Tensor& t = single(tensors, "broadcast");
    const int root = checkRoot(opts.rootRank, "broadcast");
    at::Tensor buf = contiguousOf(t);
    return enqueue(OpType::BROADCAST, "broadcast", tensors, opts.timeout, [t, buf, root](ncclComm_t comm) {
      weft_torch::broadcast(comm, buf, root);
      copyBack(t, buf);
    });
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override {
    const at::Tensor& t = single(tensors, "reduce");
    const int root = checkRoot(opts.rootRank, "reduce");
    Reduction r = toReduction(opts.reduceOp, "reduce");
    checkReduction(r, t.scalar_type(), "reduce");
    at::Tensor buf = contiguousOf(t);
    return enqueue(OpType::REDUCE, "reduce", tensors, opts.timeout, [t, buf, r, root](ncclComm_t comm) {
      weft_torch::reduce(comm, buf, r, root);
      copyBack(t, buf);
    });
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override {
    const at::Tensor& in = single(inputs, "all_gather");
    if (outputs.size() != 1) usage("all_gather takes one output list, got " + std::to_string(outputs.size()));
    std::vector<at::Tensor> outs = outputs[0];
    checkListOf(outs, in, "all_gather");
    at::Tensor src = contiguousOf(in);
    return enqueue(OpType::ALLGATHER, "all_gather", outs, opts.timeout, [outs, src](ncclComm_t comm) {
      // One gather into a flat buffer, then one copy per rank: the list's tensors need not be
      // adjacent in memory.
      const int64_t n = src.numel();
      at::Tensor flat = at::empty({n * static_cast<int64_t>(outs.size())}, src.options());
      allGather(comm, src, flat);
      for (size_t i = 0; i < outs.size(); ++i)
        outs[i].copy_(flat.narrow(0, static_cast<int64_t>(i) * n, n).view(outs[i].sizes()));
    });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& out, at::Tensor& in,
                                                 const c10d::AllgatherOptions& opts) override {
    checkTensor(in, "all_gather_into_tensor");
    sameKind(in, out, "all_gather_into_tensor");
    if (out.numel() != in.numel() * getSize())
      usage("all_gather_into_tensor: the output has " + std::to_string(out.numel()) + " elements, expected " +
            std::to_string(getSize()) + " x " + std::to_string(in.numel()));
    at::Tensor src = contiguousOf(in);
    at::Tensor dst = contiguousOf(out);
    return enqueue(OpType::_ALLGATHER_BASE, "all_gather_into_tensor", {out}, opts.timeout,
                   [out, src, dst](ncclComm_t comm) {
                     allGather(comm, src, dst);
                     copyBack(out, dst);
                   });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    const at::Tensor& out = single(outputs, "reduce_scatter");
    if (inputs.size() != 1) usage("reduce_scatter takes one input list, got " + std::to_string(inputs.size()));
    checkListOf(inputs[0], out, "reduce_scatter");
    Reduction r = toReduction(opts.reduceOp, "reduce_scatter");
    checkReduction(r, out.scalar_type(), "reduce_scatter");
    // The inputs, end to end, are the vector Weft scatters: a copy made now, at issue time.
    std::vector<at::Tensor> flat;
    for (const at::Tensor& t : inputs[0]) flat.push_back(t.reshape({-1}));
    at::Tensor src = at::cat(flat);
    at::Tensor dst = contiguousOf(out);
    return enqueue(OpType::REDUCE_SCATTER, "reduce_scatter", outputs, opts.timeout,
                   [out, src, dst, r](ncclComm_t comm) {
                     reduceScatter(comm, src, dst, r);
                     copyBack(out, dst);
                   });
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& out, at::Tensor& in,
                                                      const c10d::ReduceScatterOptions& opts) override {
    checkTensor(in, "reduce_scatter_tensor");
    sameKind(in, out, "reduce_scatter_tensor");
    if (in.numel() != out.numel() * getSize())
      usage("reduce_scatter_tensor: the input has " + std::to_string(in.numel()) + " elements, expected " +
            std::to_string(getSize()) + " x " + std::to_string(out.numel()));
    Reduction r = toReduction(opts.reduceOp, "reduce_scatter_tensor");
    checkReduction(r, in.scalar_type(), "reduce_scatter_tensor");
    at::Tensor src = contiguousOf(in);
    at::Tensor dst = contiguousOf(out);
    return enqueue(OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {out}, opts.timeout,
                   [out, src, dst, r](ncclComm_t comm) {
                     reduceScatter(comm, src, dst, r);
                     copyBack(out, dst);
                   });
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& out, at::Tensor& in, std::vector<int64_t>& outSplits,
                                               std::vector<int64_t>& inSplits,
                                               const c10d::AllToAllOptions& opts) override {
    checkTensor(in, "all_to_all_single");
    sameKind(in, out, "all_to_all_single");
    checkSplits(in, inSplits, "input");
    checkSplits(out, outSplits, "output");
    if (inSplits.empty() && outSplits.empty() && in.numel() != out.numel())
      usage("all_to_all_single: input and output differ in size (" + std::to_string(in.numel()) + " and " +
            std::to_string(out.numel()) + " elements) and no split sizes were given");
    at::Tensor src = contiguousOf(in);
    at::Tensor dst = contiguousOf(out);
    return enqueue(OpType::ALLTOALL_BASE, "all_to_all_single", {out}, opts.timeout,
                   [out, src, dst, outSplits, inSplits](ncclComm_t comm) {
                     allToAllSingle(comm, src, dst, outSplits, inSplits);
                     copyBack(out, dst);
                   });
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override {
    if (inputs.size() != static_cast<size_t>(getSize()) || outputs.size() != static_cast<size_t>(getSize()))
      usage("all_to_all takes one input and one output tensor per rank (" + std::to_string(getSize()) + "), got " +
            std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
    std::vector<at::Tensor> srcs;
    std::vector<at::Tensor> dsts;
    for (size_t i = 0; i < inputs.size(); ++i) {
      checkTensor(inputs[i], "all_to_all");
      sameKind(inputs[i], outputs[i], "all_to_all");
      srcs.push_back(contiguousOf(inputs[i]));
      dsts.push_back(contiguousOf(outputs[i]));
    }
    const int me = getRank();
    if (inputs[me].numel() != outputs[me].numel()) usage("all_to_all: this rank's own input and output differ in size");
    return enqueue(OpType::ALLTOALL, "all_to_all", outputs, opts.timeout, [outputs, srcs, dsts](ncclComm_t comm) {
      allToAllList(comm, dsts, srcs);
      for (size_t i = 0; i < outputs.size(); ++i) copyBack(outputs[i], dsts[i]);
    });
  }

  // Tags are not used: Weft matches a rank's sends to a peer with that peer's receives from it in
  // issue order, as NCCL does.
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int /*tag*/) override {
    const at::Tensor& t = single(tensors, "send");
    checkPeer(dst, "send");
    at::Tensor buf = contiguousOf(t);
    return enqueue(OpType::SEND, "send", tensors, c10d::kUnsetTimeout,
                   [buf, dst](ncclComm_t comm) { weft_torch::send(comm, buf, dst); });
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int /*tag*/) override {
    const at::Tensor& t = single(tensors, "recv");
    checkPeer(src, "recv");
    at::Tensor buf = contiguousOf(t);
    return enqueue(OpType::RECV, "recv", tensors, c10d::kUnsetTimeout, [t, buf, src](ncclComm_t comm) {
      weft_torch::recv(comm, buf, src);
      copyBack(t, buf);
    });
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override {
    return enqueue(OpType::BARRIER, "barrier", {}, opts.timeout, [](ncclComm_t comm) { weft_torch::barrier(comm); });
  }

  // Every rank posts the same operations, so the count of posted operations is the same on every
  // rank: torch's sequence number for the group.
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return engine_->posted(); }

 private:
  c10::intrusive_ptr<c10d::Work> enqueue(OpType type, const char* name, std::vector<at::Tensor> outputs,
                                         std::chrono::milliseconds timeout, std::function<void(ncclComm_t)> job) {
    const std::chrono::milliseconds limit = timeout == c10d::kUnsetTimeout ? timeout_ : timeout;
    auto work = c10::make_intrusive<WorkWeft>(engine_, type, name, std::move(outputs), limit);
    const uint64_t seq = engine_->post(
        name, [comm = engine_->comm(), job = std::move(job)] { job(comm); },
        [work](std::exception_ptr error) { work->complete(error); });
    work->setSeq(seq);
    return work;
  }

  int checkRoot(int64_t root, const char* op) const {
    if (root < 0 || root >= getSize())
      usage(std::string(op) + ": root " + std::to_string(root) + " is not a rank of this group of " +
            std::to_string(getSize()));
    return static_cast<int>(root);
  }

  void checkPeer(int peer, const char* op) const {
    if (peer < 0 || peer >= getSize() || peer == getRank())
      usage(std::string(op) + ": peer " + std::to_string(peer) + " is not another rank of this group of " +
            std::to_string(getSize()));
  }

  // A list of one tensor per rank, each like ref.
  void checkListOf(const std::vector<at::Tensor>& list, const at::Tensor& ref, const char* op) const {
    if (list.size() != static_cast<size_t>(getSize()))
      usage(std::string(op) + ": the list has " + std::to_string(list.size()) + " tensors, expected one per rank (" +
            std::to_string(getSize()) + ")");
    for (const at::Tensor& t : list) {
      sameKind(ref, t, op);
      if (t.numel() != ref.numel())
        usage(std::string(op) + ": every rank's tensor must have " + std::to_string(ref.numel()) +
              " elements, one has " + std::to_string(t.numel()));
    }
  }

  void checkSplits(const at::Tensor& t, const std::vector<int64_t>& splits, const char* which) const {
    const int64_t rows = t.dim() > 0 ? t.size(0) : 1;
    if (splits.empty()) {
      if (rows % getSize() != 0)
        usage(std::string("all_to_all_single: the ") + which + "'s first dimension (" + std::to_string(rows) +
              ") does not divide by the group's size (" + std::to_string(getSize()) + ")");
      return;
    }
    if (splits.size() != static_cast<size_t>(getSize()))
      usage(std::string("all_to_all_single: ") + which + " split sizes name " + std::to_string(splits.size()) +
            " ranks, the group has " + std::to_string(getSize()));
    int64_t sum = 0;
    for (int64_t s : splits) {
      if (s < 0) usage(std::string("all_to_all_single: negative ") + which + " split size");
      sum += s;
    }
    if (sum != rows)
      usage(std::string("all_to_all_single: ") + which + " split sizes add up to " + std::to_string(sum) +
            " rows, the tensor has " + std::to_string(rows));
  }

  std::chrono::milliseconds timeout_;
  std::shared_ptr<Engine> engine_;
};

c10::intrusive_ptr<c10d::ProcessGroup> createProcessGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                          int size, int64_t timeoutMs) {
  if (size < 1 || rank < 0 || rank >= size)
    usage("rank " + std::to_string(rank) + " is not a rank of a group of " + std::to_string(size));
  if (timeoutMs <= 0) usage("the timeout must be positive, got " + std::to_string(timeoutMs) + " ms");
  return c10::make_intrusive<ProcessGroupWeft>(store, rank, size, std::chrono::milliseconds(timeoutMs));
}

}  // namespace
}  // namespace weft_torch

PYBIND11_MODULE(_weft_torch, m) {
  m.doc() = "Weft's torch.distributed backend (torch 1.13 API); import weft.torch to register it";
  // The Store and ProcessGroup Python types come from torch.distributed's own module.
  pybind11::module_::import("torch.distributed");
  m.def("create_process_group", &weft_torch::createProcessGroup, pybind11::arg("store"), pybind11::arg("rank"),
        pybind11::arg("size"), pybind11::arg("timeout_ms"), pybind11::call_guard<pybind11::gil_scoped_release>(),
        "Makes the weft process group of this rank: rank 0 publishes the unique id in store");
#ifdef WEFT_HAS_COMPLEX
  m.attr("has_complex") = true;
#else
  m.attr("has_complex") = false;
#endif
}
