#include "gpu_executor/gpu_executor.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/params.h"
#include "base/result.h"
#include "comm/comm.h"
#include "comm/comm_error.h"
#include "comm/connect.h"
#include "comm/op_stamp.h"
#include "gpu_executor/device_state.h"
#include "gpu_executor/kernel_entry.h"
#include "gpu_executor/kernel_profile.h"
#include "runtime/device_runtime.h"
#include "task/task.h"
#include "transports/net/proxy.h"

namespace weft::gpu {
namespace {

// Keeps the caller's current device: the API may be called with another device current.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    dev::runtime().getDevice(&previous_);
    if (previous_ != device) dev::runtime().setDevice(device);
  }
  ~DeviceGuard() {
    int now = -1;
    dev::runtime().getDevice(&now);
    if (previous_ >= 0 && now != previous_) dev::runtime().setDevice(previous_);
  }

 private:
  int previous_ = -1;
};

size_t align16(size_t n) { return (n + 15) & ~size_t(15); }

// The links one sequence uses, each way, in the order the kernel indexes them.
struct SeqLinks {
  Connection* send[kMaxSeqPeers] = {};
  Connection* recv[kMaxSeqPeers] = {};
};

Connection* linkTo(ncclComm* comm, const Sequence& s, int peer, bool sender) {
  return getConnection(comm, s.lane, s.channel, peer, sender, comm->laneSlots(s.lane));
}

SeqLinks linksOf(ncclComm* comm, const Sequence& s) {
  SeqLinks l;
  if (s.multiPeer()) {
    for (int i = 0; i < s.nSendPeers; ++i) l.send[i] = linkTo(comm, s, s.sendPeers[i], true);
    for (int i = 0; i < s.nRecvPeers; ++i) l.recv[i] = linkTo(comm, s, s.recvPeers[i], false);
  } else {
    if (s.sendPeer >= 0) l.send[0] = linkTo(comm, s, s.sendPeer, true);
    if (s.recvPeer >= 0) l.recv[0] = linkTo(comm, s, s.recvPeer, false);
  }
  return l;
}

struct PendingLink {
  ncclComm* comm;
  Connection* conn;
  const Task* task;  // the operation that needs the link, for messages
};

// Connects every link of every communicator of the launch together (comm/connect.h): a peer's
// receive side may wait on our send side's handshake, and one thread may drive several
// communicators whose ranks are each other's peers (one process, several GPUs). Bounded by
// WEFT_TIMEOUT_MS; the error names the link that never came.
ncclResult_t connectLinks(const std::vector<PendingLink>& links) {
  std::vector<Connection*> conns;
  std::vector<const std::atomic<bool>*> aborts;
  for (const PendingLink& l : links) {
    conns.push_back(l.conn);
    aborts.push_back(&l.comm->abortFlag);
  }
  const ConnectOutcome w =
      connectAll(conns, aborts, nowNs() + param::timeoutMs() * 1000000, [&](size_t i, bool* ready, std::string* why) {
        DeviceGuard guard(links[i].comm->gpu->device());  // a P2P FIFO is allocated on its rank's GPU
        return links[i].conn->tryConnect(ready, why);
      });
  if (w.end == ConnectOutcome::End::kConnected) return ncclSuccess;
  const PendingLink& l = links[w.link];
  ncclComm* comm = l.comm;
  switch (w.end) {
    case ConnectOutcome::End::kFailed:
      return setError(comm, w.result, "rank %d (GPU): %s while setting up %s #%" PRIu64, comm->rank, w.why.c_str(),
                      collName(l.task->kind), l.task->seq);
    case ConnectOutcome::End::kAborted:
      return setError(comm, ncclInvalidUsage, "rank %d: communicator aborted while connecting %s", comm->rank,
                      l.conn->id().describe().c_str());
    default:
      return setError(comm, ncclRemoteError,
                      "rank %d (GPU) waited %" PRId64 " ms for rank %d to set up %s for %s #%" PRIu64
                      " (WEFT_TIMEOUT_MS); is it calling the same operation?",
                      comm->rank, param::timeoutMs(), l.conn->peer(), l.conn->id().describe().c_str(),
                      collName(l.task->kind), l.task->seq);
  }
}

// Maps every rank's direct-lane staging area for each communicator that needs them (`needs`: the
// first task that does, per communicator; null: none), all together, since one thread may drive
// several communicators whose ranks are each other's peers. Bounded by WEFT_TIMEOUT_MS; the error
// names the ranks whose areas never came.
ncclResult_t connectDirect(const std::vector<ncclComm*>& comms, const std::vector<const Task*>& needs) {
  const int64_t deadline = nowNs() + param::timeoutMs() * 1000000;
  for (unsigned spins = 0;; ++spins) {
    bool all = true;
    for (size_t i = 0; i < comms.size(); ++i) {
      if (needs[i] == nullptr) continue;
      ncclComm* comm = comms[i];
      DeviceState& gpu = *comm->gpu;
      DeviceGuard guard(gpu.device());
      bool ready = false;
      std::string why;
      ncclResult_t r = gpu.direct.tryConnect(comm->commHash, comm->rank, comm->nranks, gpu.device(),
                                             comm->direct.dataBytes(), &ready, &why);
      if (r != ncclSuccess)
        return setError(comm, r, "rank %d (GPU): %s while setting up %s #%" PRIu64, comm->rank, why.c_str(),
                        collName(needs[i]->kind), needs[i]->seq);
      if (ready) continue;
      all = false;
      if (comm->abortFlag.load(std::memory_order_relaxed))
        return setError(comm, ncclInvalidUsage, "rank %d: communicator aborted while mapping direct-access areas",
                        comm->rank);
      if (nowNs() > deadline) {
        std::string missing;
        for (int p : gpu.direct.unmapped()) missing += (missing.empty() ? "" : ", ") + std::to_string(p);
        return setError(comm, ncclRemoteError,
                        "rank %d (GPU) waited %" PRId64
                        " ms for the direct-access staging areas of ranks %s for %s #%" PRIu64
                        " (WEFT_TIMEOUT_MS); are they calling the same operation?",
                        comm->rank, param::timeoutMs(), missing.c_str(), collName(needs[i]->kind), needs[i]->seq);
      }
    }
    if (all) return ncclSuccess;
    if (spins < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// The descriptor of one communicator's launch, built in host memory.
class DescriptorBuilder {
 public:
  DescriptorBuilder(ncclComm* comm, DeviceState& gpu, std::span<const Task> tasks)
      : comm_(comm), gpu_(gpu), tasks_(tasks) {}
  // The links the sequences in `order` use, appended to *links (to be connected before add).
  ncclResult_t collect(const Program& prog, const std::vector<uint32_t>& order, std::vector<PendingLink>* links);
  // capturing: the launch goes into a graph (direct-lane sequences get a barrier before and after).
  ncclResult_t add(const Program& prog, const std::vector<uint32_t>& order, bool capturing);
  std::vector<unsigned char> finish(size_t* bytes, uint32_t* nChains);
  // The first task with a direct-lane sequence in this launch (null: none, no areas needed).
  const Task* directTask() const { return directTask_; }
  // After finish: which operation and channel each entry of the kernel's times belongs to.
  void describeTimes(KernelEvents* events) const;

 private:
  uint16_t linkIndex(Connection* c, std::string* why, ncclResult_t* r);
  uint32_t taskIndex(const Task* t);
  void splitDirectChains();

  ncclComm* comm_;
  DeviceState& gpu_;
  std::span<const Task> tasks_;  // what the program's sequences index
  std::vector<DevChain> chains_;
  std::vector<size_t> largestStep_;  // by chain: bytes of its largest direct-lane step (0: none)
  std::vector<DevSequence> seqs_;
  std::vector<Step> steps_;
  std::vector<DevTask> devTasks_;
  std::vector<const Task*> taskOf_;  // by DevSequence::task
  std::vector<DevLink> links_;
  std::unordered_map<const Connection*, uint16_t> linkIds_;
  std::unordered_map<const Task*, uint32_t> taskIds_;
  std::vector<SeqLinks> perSeq_;
  const Task* directTask_ = nullptr;
};

uint16_t DescriptorBuilder::linkIndex(Connection* c, std::string* why, ncclResult_t* r) {
  if (c == nullptr) return kNoLink;
  auto it = linkIds_.find(c);
  if (it != linkIds_.end()) return it->second;
  DeviceLink* dl = nullptr;
  *r = gpu_.prepareLink(*c, &dl, why);
  if (*r != ncclSuccess) return kNoLink;
  if (dl->view.nheaders != dl->view.nslots || dl->view.smallBytes != 0) {
    *why = "the FIFO of " + c->id().describe() + " has host mode's layout (" + std::to_string(dl->view.nheaders) +
           " headers for " + std::to_string(dl->view.nslots) + " slots), which the GPU kernel does not address";
    *r = ncclInternalError;
    return kNoLink;
  }
  DevLink l{};
  l.slots = dl->view.slots;
  l.head = dl->view.head;
  l.data = dl->view.data;
  l.counter = dl->counter;
  l.nslots = dl->view.nslots;
  l.slotBytes = dl->view.slotBytes;
  l.peer = c->peer();
  l.isSender = c->isSender() ? 1 : 0;
  const uint16_t id = static_cast<uint16_t>(links_.size());
  links_.push_back(l);
  linkIds_[c] = id;
  return id;
}

uint32_t DescriptorBuilder::taskIndex(const Task* t) {
  auto it = taskIds_.find(t);
  if (it != taskIds_.end()) return it->second;
  DevTask d{};
  d.spec = t->spec;
  d.send = t->sendbuff;
  d.recv = t->recvbuff;
  d.scratch = t->scratch;
  d.count = t->count;
  d.seq = t->seq;
  d.nranks = comm_->nranks;
  d.kind = static_cast<uint8_t>(t->kind);
  d.checkMismatch = comm_->agreed.mismatchCheck ? 1 : 0;
  d.directInput = t->directInput;
  d.stamp = t->stamp;
  const uint32_t id = static_cast<uint32_t>(devTasks_.size());
  devTasks_.push_back(d);
  taskOf_.push_back(t);
  taskIds_[t] = id;
  return id;
}

ncclResult_t DescriptorBuilder::collect(const Program& prog, const std::vector<uint32_t>& order,
                                        std::vector<PendingLink>* links) {
  for (uint32_t i : order) {
    const Sequence& s = prog.sequences[i];
    if (s.lane == Lane::kDirect) {
      // No links: the kernel reads every rank's staging area (connectDirect maps them).
      if (directTask_ == nullptr) directTask_ = &tasks_[s.task];
      perSeq_.push_back(SeqLinks{});
      continue;
    }
    perSeq_.push_back(linksOf(comm_, s));
    for (Connection* c : perSeq_.back().send)
      if (c != nullptr) links->push_back(PendingLink{comm_, c, &tasks_[s.task]});
    for (Connection* c : perSeq_.back().recv)
      if (c != nullptr) links->push_back(PendingLink{comm_, c, &tasks_[s.task]});
  }
  return ncclSuccess;
}

// order: this communicator's sequence indices, sorted into chains (equal chain keys adjacent,
// issue order within a chain), as the host executor orders its cursors; collect ran first and
// the links are connected.
ncclResult_t DescriptorBuilder::add(const Program& prog, const std::vector<uint32_t>& order, bool capturing) {
  for (size_t k = 0; k < order.size(); ++k) {
    const Sequence& s = prog.sequences[order[k]];
    const bool newChain = k == 0 || chainKeyOf(s) != chainKeyOf(prog.sequences[order[k - 1]]);
    if (newChain) {
      chains_.push_back(DevChain{static_cast<uint32_t>(seqs_.size()), 0, 0, 1, 0, 0});
      largestStep_.push_back(0);
    }
    chains_.back().nSeq++;
    if (s.lane == Lane::kDirect) {
      const size_t es = dataTypeSize(tasks_[s.task].dtype);
      for (uint32_t j = 0; j < s.nSteps; ++j)
        largestStep_.back() = std::max(largestStep_.back(), prog.steps[s.firstStep + j].count * es);
    }
    DevSequence d{};
    d.task = taskIndex(&tasks_[s.task]);
    d.firstStep = static_cast<uint32_t>(steps_.size());
    d.nSteps = s.nSteps;
    d.channel = s.channel;
    d.lane = static_cast<uint8_t>(s.lane);
    d.multiPeer = s.multiPeer() ? 1 : 0;
    d.fenced = capturing && s.lane == Lane::kDirect ? 1 : 0;
    std::string why;
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < kMaxSeqPeers; ++i) {
      d.send[i] = linkIndex(perSeq_[k].send[i], &why, &r);
      if (r == ncclSuccess) d.recv[i] = linkIndex(perSeq_[k].recv[i], &why, &r);
      if (r != ncclSuccess) return setError(comm_, r, "rank %d (GPU): %s", comm_->rank, why.c_str());
      d.nSend += d.send[i] != kNoLink;
      d.nRecv += d.recv[i] != kNoLink;
    }
    steps_.insert(steps_.end(), prog.steps.begin() + s.firstStep, prog.steps.begin() + s.firstStep + s.nSteps);
    seqs_.push_back(d);
  }
  return ncclSuccess;
}

// A direct-lane chain runs on one block per kDirectPartBytes of its largest step, up to
// WEFT_DIRECT_BLOCKS: its blocks meet at this rank's own barrier before it meets its peers
// (direct_kernel.h), so the number is this rank's own choice. Ring and tree chains keep one block.
void DescriptorBuilder::splitDirectChains() {
  std::vector<DevChain> split;
  const size_t most = static_cast<size_t>(std::max<int64_t>(1, param::directBlocks()));
  for (size_t c = 0; c < chains_.size(); ++c) {
    const size_t parts = std::clamp<size_t>((largestStep_[c] + kDirectPartBytes - 1) / kDirectPartBytes, 1, most);
    for (size_t p = 0; p < parts; ++p)
      split.push_back(
          DevChain{chains_[c].firstSeq, chains_[c].nSeq, static_cast<uint32_t>(p), static_cast<uint32_t>(parts), 0, 0});
  }
  chains_ = std::move(split);
  uint32_t times = 0;
  for (DevChain& c : chains_) c.firstTime = times, times += c.nSeq;
}

void DescriptorBuilder::describeTimes(KernelEvents* events) const {
  for (const DevChain& c : chains_)
    for (uint32_t k = 0; k < c.nSeq; ++k) {
      const DevSequence& q = seqs_[c.firstSeq + k];
      events->add(c.firstTime + k, taskOf_[q.task]->profilerOp, q.channel);
    }
}

std::vector<unsigned char> DescriptorBuilder::finish(size_t* bytes, uint32_t* nChains) {
  splitDirectChains();
  LaunchHeader h{};
  h.nChains = static_cast<uint32_t>(chains_.size());
  for (const DevChain& c : chains_) h.nTimes += c.nSeq;
  h.nSeqs = static_cast<uint32_t>(seqs_.size());
  h.nSteps = static_cast<uint32_t>(steps_.size());
  h.nTasks = static_cast<uint32_t>(devTasks_.size());
  h.nLinks = static_cast<uint32_t>(links_.size());
  h.pieceBytes = comm_->slotBytes;
  size_t off = align16(sizeof h);
  h.chainOff = off, off = align16(off + chains_.size() * sizeof(DevChain));
  h.seqOff = off, off = align16(off + seqs_.size() * sizeof(DevSequence));
  h.stepOff = off, off = align16(off + steps_.size() * sizeof(Step));
  h.taskOff = off, off = align16(off + devTasks_.size() * sizeof(DevTask));
  h.linkOff = off, off = align16(off + links_.size() * sizeof(DevLink));
  const std::vector<DevDirectArea> direct = directTask_ != nullptr ? gpu_.direct.table() : std::vector<DevDirectArea>{};
  h.nDirect = static_cast<uint32_t>(direct.size());
  h.directOff = off, off = align16(off + direct.size() * sizeof(DevDirectArea));
  h.rank = comm_->rank;
  h.nranks = comm_->nranks;
  if (directTask_ != nullptr && comm_->deviceWindows != nullptr && comm_->deviceWindows->device() != nullptr) {
    h.windows = comm_->deviceWindows->device();
    h.windowRows = DeviceWindowTable::kRows;
  }
  std::vector<unsigned char> blob(off);
  memcpy(blob.data(), &h, sizeof h);
  auto put = [&](uint64_t at, const auto& v) {
    if (!v.empty()) memcpy(blob.data() + at, v.data(), v.size() * sizeof(v[0]));
  };
  put(h.chainOff, chains_);
  put(h.seqOff, seqs_);
  put(h.stepOff, steps_);
  put(h.taskOff, devTasks_);
  put(h.linkOff, links_);
  put(h.directOff, direct);
  *bytes = off;
  *nChains = h.nChains;
  return blob;
}

// Orders launches of one communicator issued on different streams: each waits for the last.
ncclResult_t orderAfterLast(DeviceState& gpu, void* stream, bool capturing) {
  if (capturing || gpu.lastStream == nullptr || gpu.lastStream == stream) return ncclSuccess;
  return dev::runtime().streamWaitEvent(stream, gpu.lastEvent);
}

ncclResult_t launchFor(ncclComm* comm, const Program& prog, std::span<const Task> tasks,
                       const std::vector<uint32_t>& order, DescriptorBuilder& builder) {
  DeviceState& gpu = *comm->gpu;
  dev::Runtime& rt = dev::runtime();
  DeviceGuard guard(gpu.device());
  // The launch goes on the stream of the communicator's first task; tasks of the group given on
  // other streams join it before and wait for it after, as one fused launch.
  void* stream = tasks[prog.sequences[order.front()].task].stream;
  bool capturing = false;
  WEFT_CHECK(rt.streamIsCapturing(stream, &capturing));
  WEFT_CHECK(builder.add(prog, order, capturing));
  size_t bytes = 0;
  uint32_t nChains = 0;
  std::vector<unsigned char> blob = builder.finish(&bytes, &nChains);
  auto* h = reinterpret_cast<LaunchHeader*>(blob.data());
  h->timeoutTicks = param::timeoutMs() * comm->gpuTimerTicksPerMs;
  h->abortFlag = gpu.abortDevice();
  h->error = gpu.errorDevice();
  h->errorClaim = gpu.errorClaim();

  std::vector<void*> others;
  for (uint32_t i : order) {
    void* s = tasks[prog.sequences[i].task].stream;
    if (s != stream && std::find(others.begin(), others.end(), s) == others.end()) others.push_back(s);
  }
  WEFT_CHECK(orderAfterLast(gpu, stream, capturing));
  for (void* s : others) {
    void* ev = nullptr;
    WEFT_CHECK(rt.eventCreate(&ev));
    ncclResult_t r = rt.eventRecord(ev, s);
    if (r == ncclSuccess) r = rt.streamWaitEvent(stream, ev);
    rt.eventDestroy(ev);  // released once the wait no longer needs it
    WEFT_CHECK(r);
  }
  // The kernel's times for the profiler follow the descriptor in the slot's host memory.
  const bool profiled = !capturing && KernelEvents::wanted(comm);
  const size_t timesBytes = profiled ? h->nTimes * sizeof(DevSeqTimes) : 0;
  LaunchSlot* slot = nullptr;
  std::string why;
  ncclResult_t r = gpu.acquireSlot(align16(bytes) + timesBytes, capturing, &slot, &why);
  if (r != ncclSuccess) return setError(comm, r, "rank %d (GPU): %s", comm->rank, why.c_str());
  auto* times = reinterpret_cast<DevSeqTimes*>(static_cast<char*>(slot->host) + align16(bytes));
  if (profiled) {
    h->times = reinterpret_cast<DevSeqTimes*>(static_cast<char*>(slot->hostForDevice) + align16(bytes));
    memset(times, 0, timesBytes);  // the slot's last kernel has finished
  }
  memcpy(slot->host, blob.data(), bytes);
  WEFT_CHECK(rt.copyAsync(slot->device, slot->host, bytes, stream));
  dev::KernelLaunch l;
  l.entry = &launchStepKernel;
  l.desc = slot->device;
  l.blocks = static_cast<int>(nChains);
  l.threads = kKernelThreads;
  WEFT_CHECK(rt.launchExecutor(l, stream));
  if (profiled) {
    // Before the slot's event: a slot is reused only once its events have been given.
    auto events = std::make_unique<KernelEvents>(comm);
    builder.describeTimes(events.get());
    if (KernelEvents::queue(std::move(events), times, stream) != ncclSuccess)
      WEFT_WARN("rank %d (GPU): cannot queue the profiler's kernel events behind launch of %u blocks; they are lost",
                comm->rank, nChains);
  }
  WEFT_CHECK(rt.eventRecord(slot->done, stream));
  slot->used = true;
  if (!capturing) {
    WEFT_CHECK(rt.eventRecord(gpu.lastEvent, stream));
    gpu.lastStream = stream;
  }
  for (void* s : others) {
    void* ev = nullptr;
    WEFT_CHECK(rt.eventCreate(&ev));
    ncclResult_t rr = rt.eventRecord(ev, stream);
    if (rr == ncclSuccess) rr = rt.streamWaitEvent(s, ev);
    rt.eventDestroy(ev);
    WEFT_CHECK(rr);
  }
  WEFT_TRACE(kLogColl, "rank %d: GPU launch of %u blocks, %zu descriptor bytes%s", comm->rank, nChains, bytes,
             capturing ? " (captured)" : "");
  return ncclSuccess;
}

const char* devErrorWhat(uint32_t code) {
  switch (code) {
    case kDevTimeout: return "timed out";
    case kDevAborted: return "was aborted";
    case kDevSizeMismatch: return "got a message of the wrong size";
    case kDevStampMismatch: return "got a message of a different call";
  }
  return "failed";
}

}  // namespace

ncclResult_t setupDevice(ncclComm* comm) {
  // Some peer is on another host (or NCCL_SHM_DISABLE=1): its slots move through the proxy, which
  // must poll for what kernels publish.
  if (comm->network != nullptr) {
    net::Proxy::instance().holdPolling();
    comm->gpuHoldsProxy = true;
  }
  dev::Runtime& rt = dev::runtime();
  int device = -1;
  WEFT_CHECK(rt.getDevice(&device));
  dev::DeviceInfo info;
  WEFT_CHECK(rt.deviceInfo(device, &info));
  std::unique_ptr<DeviceState, DeviceStateDeleter> gpu(new DeviceState);
  std::string why;
  ncclResult_t r = gpu->init(device, &why);
  if (r != ncclSuccess) return setError(comm, r, "rank %d: GPU %d setup failed: %s", comm->rank, device, why.c_str());
  comm->gpu = std::move(gpu);
  comm->gpuTimerTicksPerMs = info.timerTicksPerMs > 0 ? info.timerTicksPerMs : 1000000;
  comm->hostMode = false;
  WEFT_INFO(kLogInit, "rank %d runs on GPU %d (%s, %s, %d multiprocessors)", comm->rank, device, info.name,
            info.pciBusId, info.multiProcessors);
  return ncclSuccess;
}

ncclResult_t executeOnDevice(const Program& prog, std::span<const Task> tasks) {
  // One launch per communicator, in the order communicators first appear.
  std::vector<ncclComm*> comms;
  std::vector<std::vector<uint32_t>> orders;
  for (uint32_t i = 0; i < prog.sequences.size(); ++i) {
    ncclComm* comm = tasks[prog.sequences[i].task].comm;
    auto it = std::find(comms.begin(), comms.end(), comm);
    if (it == comms.end()) {
      comms.push_back(comm);
      orders.emplace_back();
      it = comms.end() - 1;
    }
    orders[it - comms.begin()].push_back(i);
  }
  std::vector<std::unique_ptr<DescriptorBuilder>> builders;
  std::vector<PendingLink> links;
  for (size_t k = 0; k < comms.size(); ++k) {
    pollDeviceError(comms[k]);
    sortIntoChains(prog, &orders[k]);
    builders.push_back(std::make_unique<DescriptorBuilder>(comms[k], *comms[k]->gpu, tasks));
    WEFT_CHECK(builders.back()->collect(prog, orders[k], &links));
  }
  WEFT_CHECK(connectLinks(links));
  std::vector<const Task*> needs;
  for (const auto& b : builders) needs.push_back(b->directTask());
  WEFT_CHECK(connectDirect(comms, needs));
  for (size_t k = 0; k < comms.size(); ++k) WEFT_CHECK(launchFor(comms[k], prog, tasks, orders[k], *builders[k]));
  return ncclSuccess;
}

ncclResult_t deviceScratch(ncclComm* comm, size_t bytes, void** out) {
  DeviceGuard guard(comm->gpu->device());
  std::string why;
  ncclResult_t r = comm->gpu->scratch(bytes, out, &why);
  if (r != ncclSuccess) return setError(comm, r, "rank %d: %s", comm->rank, why.c_str());
  return ncclSuccess;
}

namespace {
// A launch of comm failed: record why, mark the communicator failed and tell the local peers.
void failWith(ncclComm* comm, ncclResult_t r, const std::string& msg) {
  setError(comm, r, "%s", msg.c_str());
  comm->errors.setAsync(r);
  comm->setState(CommState::kFailed);
  comm->peers.announceFailure(comm->errors.message().c_str());
}
}  // namespace

void pollDeviceError(ncclComm* comm) {
  if (comm->gpu == nullptr) return;
  const DevError* e = comm->gpu->errorHost();
  const uint32_t code = *reinterpret_cast<const volatile uint32_t*>(&e->code);
  if (code == kDevOk || comm->gpuErrorReported) return;
  comm->gpuErrorReported = true;
  if (code == kDevStampMismatch) {
    // The same two-sided text as the host executor's: what this rank and the peer called.
    failWith(comm, ncclInvalidUsage, mismatchText(comm->commHash, comm->rank, e->mine, e->peer, e->theirs));
    return;
  }
  if (code == kDevUnreadableInput) {
    // As the host executor says it: the ranks disagree about the window.
    char text[320];
    snprintf(text, sizeof text,
             "rank %d (GPU %d) cannot read the input rank %d published in a window for %s #%" PRIu64
             ": the window is not registered here (deregister windows on every rank alike)",
             comm->rank, comm->gpu->device(), e->peer, collName(static_cast<CollKind>(e->kind)), e->opSeq);
    failWith(comm, ncclInvalidUsage, text);
    return;
  }
  char what[512];
  if (static_cast<Lane>(e->lane) == Lane::kDirect && (code == kDevTimeout || code == kDevAborted) &&
      e->peer == comm->rank)
    // A block of a sequence that several run (direct_kernel.h directBarrierParts) lost the others.
    snprintf(what, sizeof what,
             "rank %d (GPU %d) %s at a direct-access barrier waiting for the other thread blocks of its own "
             "direct-lane sequence in %s #%" PRIu64 " (step %u of %u; are all of the launch's blocks resident?)",
             comm->rank, comm->gpu->device(), devErrorWhat(code), collName(static_cast<CollKind>(e->kind)), e->opSeq,
             e->step + 1, e->nSteps);
  else if (static_cast<Lane>(e->lane) == Lane::kDirect && (code == kDevTimeout || code == kDevAborted))
    snprintf(what, sizeof what,
             "rank %d (GPU %d) %s at a direct-access barrier waiting for rank %d in %s #%" PRIu64
             " (direct lane, step %u of %u)",
             comm->rank, comm->gpu->device(), devErrorWhat(code), e->peer, collName(static_cast<CollKind>(e->kind)),
             e->opSeq, e->step + 1, e->nSteps);
  else
    snprintf(what, sizeof what,
             "rank %d (GPU %d) %s while waiting %s rank %d in %s #%" PRIu64
             " (%s lane, channel %d, step %u of %u: %s, %" PRIu64 " of %" PRIu64 " elements done)",
             comm->rank, comm->gpu->device(), devErrorWhat(code),
             e->receiving ? "to receive from" : "for room to send to", e->peer,
             collName(static_cast<CollKind>(e->kind)), e->opSeq, laneName(static_cast<Lane>(e->lane)), e->channel,
             e->step + 1, e->nSteps, stepName(static_cast<StepOp>(e->stepOp)), e->done, e->count);
  std::string msg = what;
  if (code == kDevSizeMismatch)
    msg += ": expected " + std::to_string(e->wantBytes) + " bytes, got " + std::to_string(e->gotBytes) +
           " (do the counts and datatypes of matching calls agree?)";
  if (code == kDevTimeout) msg += " (WEFT_TIMEOUT_MS=" + std::to_string(param::timeoutMs()) + ")";
  const ncclResult_t r = code == kDevSizeMismatch ? ncclInvalidUsage
                         : code == kDevAborted    ? ncclInvalidUsage
                                                  : ncclRemoteError;
  failWith(comm, r, msg);
}

void abortDevice(ncclComm* comm) {
  if (comm->gpu != nullptr) *comm->gpu->abortHost() = 1;
}

void teardownDevice(ncclComm* comm) {
  if (comm->gpu == nullptr) return;
  DeviceGuard guard(comm->gpu->device());
  if (!comm->gpu->waitIdle(param::timeoutMs())) {
    // A kernel still waits for a peer that will never come: make it give up, then wait again.
    WEFT_WARN("rank %d: GPU kernels still running at destroy after %" PRId64 " ms; aborting them", comm->rank,
              param::timeoutMs());
    *comm->gpu->abortHost() = 1;
    comm->gpu->waitIdle(param::timeoutMs());
  }
  // As the P2P FIFOs wait for their last messages to be read: at most 10 s, and not after a
  // failure or an abort (the peers may be gone).
  const bool healthy = *comm->gpu->abortHost() == 0 && !comm->abortFlag.load() && !comm->gpuErrorReported;
  const int64_t departMs = healthy ? std::min<int64_t>(param::timeoutMs(), 10000) : 0;
  const std::vector<int> late = comm->gpu->direct.depart(departMs);
  if (healthy && !late.empty()) {
    std::string ranks;
    for (int p : late) ranks += (ranks.empty() ? "" : ", ") + std::to_string(p);
    WEFT_WARN("rank %d: ranks %s did not finish with this rank's direct-access staging area within %" PRId64
              " ms of its destroy; freeing it anyway",
              comm->rank, ranks.c_str(), departMs);
  }
  {
    // Events still queued behind a kernel that never finished must not reach the plugin after its
    // context is finalized.
    std::lock_guard<std::mutex> lock(comm->gpu->kernelEventGate->mutex);
    comm->gpu->kernelEventGate->open = false;
  }
  comm->gpu->releaseLinks();
  comm->gpu.reset();
  if (comm->gpuHoldsProxy) net::Proxy::instance().releasePolling();
  comm->gpuHoldsProxy = false;
}

}  // namespace weft::gpu
