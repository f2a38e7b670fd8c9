#include "enqueue/group.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/errors.h"
#include "base/result.h"
#include "collectives/registry.h"
#include "comm/comm.h"
#include "comm/comm_algorithms.h"
#include "comm/comm_error.h"
#include "comm/op_stamp.h"
#include "comm/shared_input.h"
#include "enqueue/profile_events.h"
#include "gpu_executor/gpu_executor.h"
#include "host_executor/host_executor.h"
#include "trace/trace.h"
#include "tuning/call_selection.h"
#include "tuning/select.h"

namespace weft {
namespace {

// What a reusable algorithm's program for one task depends on (AlgorithmDesc::reusable): the
// communicator (its tuner's serial tells a new communicator at the same address apart) and the
// task's arguments and selection. A group's program depends on its tasks' keys, in order.
struct ProgramKey {
  const ncclComm* comm = nullptr;
  uint64_t tunerSerial = 0;
  CollKind kind{};
  size_t count = 0;
  ncclDataType_t dtype{};
  ncclRedOp_t op{};
  int root = 0;
  Algorithm algorithm{};
  Protocol protocol = Protocol::kSimple;
  int nChannels = 0;
  bool scratch = false;
  friend bool operator==(const ProgramKey&, const ProgramKey&) = default;
};

// The keys of a group whose program may be reused (a lone collective, or a pipeline stage's
// ncclSend and ncclRecv in one group); false when it may not be. The group's self transfers were
// paired already, the same way for the same calls.
bool reusableKeys(const std::vector<Task>& tasks, std::vector<ProgramKey>* keys) {
  keys->clear();
  for (const Task& t : tasks) {
    // Per-peer counts are not in the key.
    if (!t.comm->hostMode || t.comm->tuner == nullptr || hasPerPeerCounts(t.kind) ||
        !algorithmDesc(t.algorithm).reusable)
      return false;
    keys->push_back(ProgramKey{.comm = t.comm,
                               .tunerSerial = t.comm->tuner->serial(),
                               .kind = t.kind,
                               .count = t.count,
                               .dtype = t.dtype,
                               .op = t.op,
                               .root = t.root,
                               .algorithm = t.algorithm,
                               .protocol = t.protocol,
                               .nChannels = t.nChannels,
                               .scratch = t.scratch != nullptr});
  }
  return !keys->empty();
}

struct GroupState {
  int depth = 0;
  int64_t startNs = 0;  // when the outermost ncclGroupStart ran (traced runs only)
  ncclResult_t error = ncclSuccess;
  std::vector<Task> tasks;
  std::vector<std::function<ncclResult_t()>> jobs;
  std::vector<std::function<ncclResult_t()>> afterJobs;  // groupAfter
  Program program;                                       // kept between calls so steady-state calls allocate nothing
  std::vector<ProgramKey> built;                         // what `program` was built for, while it is sealed
  std::vector<ProgramKey> keys;                          // this run's, kept to allocate nothing
  std::vector<CommShape> shapes;                         // each task's communicator shape, once per run
  SelectionMemo selection;                               // this thread's last selection (tuning/select.h)
  ProfiledRun profiled;
};

// The calling thread's group, on the heap behind a thread-local pointer. With the thread-local
// object itself, the compiler specialised runTasks for its address and looked that address up
// again (a call into the dynamic linker's TLS code) on each of 16 uses per operation.
GroupState& threadGroup() {
  thread_local std::unique_ptr<GroupState> group;
  if (group == nullptr) group = std::make_unique<GroupState>();
  return *group;
}

// Resolves what can only be known when the operation runs: the reduction (a device-resident
// pre-multiply scalar is read now, as NCCL reads it when the kernel runs).
ncclResult_t resolve(Task& t) {
  ncclComm* comm = t.comm;
  ReduceSpec& spec = t.spec;  // written in place: a copy from a local stalled on its partial stores
  spec = ReduceSpec{};
  spec.dtype = t.dtype;
  if (!collReduces(t.kind)) return ncclSuccess;
  if (t.op < ncclNumOps) {
    makeReduceSpec(t.dtype, t.op, comm->nranks, &spec);
  } else {
    UserRedOp u;
    if (!comm->redOps.lookup(t.op, &u))
      return setError(comm, ncclInvalidArgument, "%s: reduction op %d was destroyed before the group ran",
                      collName(t.kind), static_cast<int>(t.op));
    spec.op = BaseOp::kSum;
    spec.preMul = true;
    if (u.residence == ncclScalarHostImmediate) {
      spec.preMulScalar = u.scalarBits;
      spec.preMulScalarHi = u.scalarBitsHi;
    } else {
      uint64_t words[2] = {0, 0};  // a complex128 scalar fills both
      memcpy(words, u.scalarPtr, dataTypeSize(t.dtype));
      spec.preMulScalar = words[0];
      spec.preMulScalarHi = words[1];
    }
  }
  return ncclSuccess;
}

// A send to self and a receive from self issued in one group become a local copy; they pair in
// the order they were issued.
ncclResult_t pairSelfTransfers(std::vector<Task>& tasks) {
  std::vector<size_t> sends, recvs;
  for (size_t i = 0; i < tasks.size(); ++i) {
    Task& t = tasks[i];
    if ((t.kind == CollKind::kSend || t.kind == CollKind::kRecv) && t.root == t.comm->rank)
      (t.kind == CollKind::kSend ? sends : recvs).push_back(i);
  }
  if (sends.empty() && recvs.empty()) return ncclSuccess;
  std::vector<bool> used(recvs.size(), false);
  for (size_t si : sends) {
    Task& s = tasks[si];
    size_t match = SIZE_MAX;
    for (size_t k = 0; k < recvs.size(); ++k)
      if (!used[k] && tasks[recvs[k]].comm == s.comm) {
        used[k] = true;
        match = recvs[k];
        break;
      }
    if (match == SIZE_MAX)
      return setError(s.comm, ncclInvalidUsage,
                      "ncclSend to self (rank %d) has no matching ncclRecv from self in the same group", s.comm->rank);
    Task& r = tasks[match];
    if (r.count != s.count || r.dtype != s.dtype)
      return setError(s.comm, ncclInvalidUsage,
                      "ncclSend to self sends %zu x %s but the matching ncclRecv expects %zu x %s", s.count,
                      dataTypeName(s.dtype), r.count, dataTypeName(r.dtype));
    s.kind = CollKind::kCopy;
    s.recvbuff = r.recvbuff;
    r.kind = CollKind::kCopy;  // satisfied by the send's copy: nothing left to move
    r.count = 0;
    r.sendbuff = r.recvbuff;
  }
  for (size_t k = 0; k < recvs.size(); ++k)
    if (!used[k]) {
      Task& r = tasks[recvs[k]];
      return setError(r.comm, ncclInvalidUsage,
                      "ncclRecv from self (rank %d) has no matching ncclSend to self in the same group", r.comm->rank);
    }
  return ncclSuccess;
}

// One "op" event per operation of the run, all spanning it: the operations of a group move
// together, interleaved on their chains, so the run's span is what each of them took.
void traceOperations(const std::vector<Task>& tasks, int64_t startNs, int64_t endNs, ncclResult_t r) {
  for (const Task& t : tasks) {
    trace::Args a;
    a.hex("comm", t.comm->commHash).num("commRank", t.comm->rank).num("nranks", t.comm->nranks);
    a.num("seq", static_cast<int64_t>(t.seq)).num("count", static_cast<int64_t>(t.count));
    a.str("datatype", dataTypeName(t.dtype));
    if (collReduces(t.kind)) a.str("redop", redopName(t.stamp.redop));
    a.num("bytes", static_cast<int64_t>(t.count * dataTypeSize(t.dtype)));
    if (t.kind == CollKind::kSend || t.kind == CollKind::kRecv)
      a.num("peer", t.root);
    else if (t.kind == CollKind::kBroadcast || t.kind == CollKind::kReduce || t.kind == CollKind::kGather ||
             t.kind == CollKind::kScatter)
      a.num("root", t.root);
    a.str("algorithm", algorithmName(t.algorithm)).str("protocol", protocolName(t.protocol));
    a.num("channels", t.nChannels).str("result", resultString(r));
    // A nccl<Coll>Config call's ncclCollConfig_t::userProfilerTag, so a user can find their calls.
    if (t.userProfilerTag != 0) a.hex("userTag", t.userProfilerTag);
    trace::record(trace::Cat::kOp, t.comm->traceRank, collName(t.kind), startNs, endNs, a.take());
  }
}

ncclResult_t runTasks(GroupState& g) {
  const int64_t traceStart = trace::on() ? nowNs() : 0;
  // Numbered when they run, in issue order, not when issued: ncclGroupSimulateEnd drops its
  // operations, and a rank that simulates alone must not move its numbers away from its peers'.
  for (Task& t : g.tasks) assignOpNumber(&t);
  for (Task& t : g.tasks) WEFT_CHECK(resolve(t));
  WEFT_CHECK(pairSelfTransfers(g.tasks));
  // Scratch first, for all tasks, so that growing it cannot move a buffer a program already uses.
  // Tasks of one communicator share its scratch: they run one after another on its ring chain.
  // A task that needs scratch is marked with a non-null placeholder first, then pointed at the
  // (final) buffer once every size is known.
  // A group runs on one kind of executor: GPU communicators launch kernels, host ones run here.
  const bool onDevice = !g.tasks.empty() && !g.tasks.front().comm->hostMode;
  for (const Task& t : g.tasks)
    if (t.comm->hostMode == onDevice)
      return setError(t.comm, ncclInvalidUsage,
                      "a group mixes GPU and host-mode communicators (rank %d's is %s); issue them in separate groups",
                      t.comm->rank, t.comm->hostMode ? "host mode" : "on a GPU");
  g.shapes.clear();
  for (Task& t : g.tasks) {
    // The algorithms see the communicator only through its shape (collectives/model/comm_shape.h).
    const CommShape& shape = g.shapes.emplace_back(commShape(t.comm));
    selectAlgorithm(t.comm->tuner.get(), shape, &t, &g.selection);
    t.directInput = sharedInputOf(t.comm, t);
    t.stamp = makeStamp(t);  // once per task: the hot path copies it, never rebuilds it
    rememberStamp(t.comm, t.stamp);
    size_t need = algorithmScratchBytes(shape, t);
    if (need == 0) continue;
    if (onDevice) {
      WEFT_CHECK(gpu::deviceScratch(t.comm, need, &t.scratch));
      continue;
    }
    std::vector<uint64_t>& s = t.comm->scratch;
    if (s.size() * sizeof(uint64_t) < need) {
      s.resize((need + sizeof(uint64_t) - 1) / sizeof(uint64_t));
      t.comm->scratchBytes.store(s.capacity() * sizeof(uint64_t), std::memory_order_relaxed);
    }
    t.scratch = &t.comm->scratch;
  }
  for (Task& t : g.tasks)
    if (t.scratch != nullptr && !onDevice) t.scratch = t.comm->scratch.data();
  Program& prog = g.program;
  // The same call as last time (a training loop's AllReduce): run the program already built. It
  // is sealed, so the executor keeps its chains too.
  const bool reusable = reusableKeys(g.tasks, &g.keys);
  if (!reusable || prog.sealedId() == 0 || g.keys != g.built) {
    prog.clear();
    for (size_t i = 0; i < g.tasks.size(); ++i) {
      // A sequence names its task by index and chains within its communicator's connections.
      prog.startTask(static_cast<uint32_t>(i), reinterpret_cast<uintptr_t>(g.tasks[i].comm));
      buildProgram(g.shapes[i], g.tasks[i], &prog);
    }
    if (reusable) {
      prog.seal();
      g.built.swap(g.keys);
    }
  }
  for (const Task& t : g.tasks) t.comm->activeOps.fetch_add(1);
  profileRunStarts(g.tasks, prog, &g.profiled);
  ncclResult_t r = onDevice ? gpu::executeOnDevice(prog, g.tasks) : executeOnHost(prog, g.tasks);
  profileRunDone(g.tasks, &g.profiled);
  for (const Task& t : g.tasks) t.comm->activeOps.fetch_sub(1);
  if (traceStart != 0) traceOperations(g.tasks, traceStart, nowNs(), r);
  return r;
}

}  // namespace

ncclResult_t groupStart() {
  GroupState& g = threadGroup();
  if (g.depth == 0 && trace::on()) g.startNs = nowNs();
  ++g.depth;
  return ncclSuccess;
}

bool inGroup() { return threadGroup().depth > 0; }

void groupDefer(std::function<ncclResult_t()> job) { threadGroup().jobs.push_back(std::move(job)); }

namespace {
ncclResult_t runJobs(std::vector<std::function<ncclResult_t()>>& jobs) {
  if (jobs.size() == 1) return jobs[0]();
  std::vector<ncclResult_t> results(jobs.size(), ncclSuccess);
  std::vector<std::thread> threads;
  threads.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) threads.emplace_back([&, i] { results[i] = jobs[i](); });
  for (std::thread& t : threads) t.join();
  for (ncclResult_t r : results)
    if (r != ncclSuccess) return r;
  return ncclSuccess;
}
}  // namespace

namespace {
// The outermost group ends: its deferred communicator inits/splits run now, side by side. Returns
// the group's first error (an argument error recorded earlier, else a job's).
ncclResult_t runDeferredJobs(GroupState& g) {
  ncclResult_t r = g.error;
  if (!g.jobs.empty()) {
    std::vector<std::function<ncclResult_t()>> jobs = std::move(g.jobs);
    g.jobs.clear();
    ncclResult_t jr = runJobs(jobs);
    if (r == ncclSuccess) r = jr;
  }
  return r;
}
}  // namespace

void groupAfter(std::function<ncclResult_t()> job) { threadGroup().afterJobs.push_back(std::move(job)); }

void groupRecordError(ncclResult_t code) {
  GroupState& g = threadGroup();
  if (g.depth > 0 && g.error == ncclSuccess) g.error = code;
}

ncclResult_t groupEnd() {
  GroupState& g = threadGroup();
  if (g.depth == 0) return setError(nullptr, ncclInvalidUsage, "ncclGroupEnd called without a matching ncclGroupStart");
  if (--g.depth > 0) return ncclSuccess;
  profileGroupEndStarts();
  ncclResult_t r = runDeferredJobs(g);
  const size_t nOps = g.tasks.size();
  if (r == ncclSuccess && !g.tasks.empty()) r = runTasks(g);
  std::vector<std::function<ncclResult_t()>> after = std::move(g.afterJobs);
  g.afterJobs.clear();
  for (auto& job : after)
    if (r == ncclSuccess) r = job();
  profileGroupApiDone();
  g.tasks.clear();
  g.error = ncclSuccess;
  if (g.startNs != 0) {
    trace::record(trace::Cat::kGroup, -1, "group", g.startNs, nowNs(),
                  trace::Args().num("operations", static_cast<int64_t>(nOps)).str("result", resultString(r)).take());
    g.startNs = 0;
  }
  return r;
}

ncclResult_t groupSimulateEnd(float* estimatedUs) {
  GroupState& g = threadGroup();
  if (g.depth == 0)
    return setError(nullptr, ncclInvalidUsage, "ncclGroupSimulateEnd called without a matching ncclGroupStart");
  if (--g.depth > 0) return ncclSuccess;
  // Deferred communicator inits are not operations: they run, so the communicators exist after.
  ncclResult_t r = runDeferredJobs(g);
  // A communicator runs its operations one after another; different communicators (ranks driven
  // by this thread) run side by side: the group takes as long as its slowest communicator.
  std::vector<std::pair<const ncclComm*, double>> perComm;
  for (Task& t : g.tasks) {
    if (r != ncclSuccess) break;
    selectAlgorithm(t.comm->tuner.get(), commShape(t.comm), &t);
    double us = estimateTaskUs(t);
    auto it = std::find_if(perComm.begin(), perComm.end(), [&](const auto& e) { return e.first == t.comm; });
    if (it == perComm.end())
      perComm.emplace_back(t.comm, us);
    else
      it->second += us;
  }
  profileGroupApiDone();  // nothing runs: the group API event of its calls ends here
  double total = 0;
  for (const auto& e : perComm) total = std::max(total, e.second);
  if (r == ncclSuccess) *estimatedUs = static_cast<float>(total);
  g.tasks.clear();
  g.afterJobs.clear();  // nothing ran, so there is nothing to finish
  g.error = ncclSuccess;
  return r;
}

ncclResult_t applyAlgSelection(const char* fn, Task* task) {
  const char* text = task->algSelection;
  task->algSelection = nullptr;  // the caller's string lives only as long as the call
  std::string why;
  uint64_t rows = 0;
  if (!resolveCallSelection(text, task->forceAlgSelection, task->comm->tuner.get(), commShape(task->comm), *task, &rows,
                            &why))
    return setError(task->comm, ncclInvalidArgument, "%s: %s", fn, why.c_str());
  task->callRows = rows;
  return ncclSuccess;
}

ncclResult_t enqueue(Task&& task) {
  GroupState& g = threadGroup();
  task.seq = task.comm->opCount.fetch_add(1, std::memory_order_relaxed) + 1;
  g.tasks.push_back(std::move(task));
  profileApiCall(g.tasks.back(), g.depth);
  if (g.depth > 0) return ncclSuccess;
  profileGroupEndStarts();
  ncclResult_t r = runTasks(g);
  profileGroupApiDone();
  g.tasks.clear();
  return r;
}

}  // namespace weft
