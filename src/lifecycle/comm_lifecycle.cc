#include "lifecycle/comm_lifecycle.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/host_identity.h"
#include "base/log.h"
#include "base/params.h"
#include "base/result.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/unique_id.h"
#include "comm/agreement.h"
#include "comm/comm.h"
#include "comm/comm_algorithms.h"
#include "comm/comm_error.h"
#include "comm/comm_registry.h"
#include "comm/connect.h"
#include "comm/net_devices.h"
#include "comm/rank_locality.h"
#include "gpu_executor/gpu_executor.h"
#include "lifecycle/clock_sync.h"
#include "runtime/device_runtime.h"
#include "topology/placement_query.h"
#include "topology/system.h"
#include "trace/profiler.h"
#include "trace/trace.h"
#include "transports/shm/fd_passing.h"

namespace weft {
namespace {

constexpr uint32_t kSlotsPerFifo = 8;

uint32_t slotBytesFor(const param::Agreed& agreed) {
  int64_t buff = agreed.buffSize;
  int64_t slot = buff / kSlotsPerFifo;
  slot = std::clamp<int64_t>(slot, 4096, int64_t(1) << 30);
  return static_cast<uint32_t>(slot & ~int64_t(63));
}

// NCCL_RUNTIME_CONNECT=0: connect every channel's ring neighbours now rather than on first use,
// so that the first collective pays no setup cost.
ncclResult_t connectRingsNow(ncclComm* comm) {
  if (comm->nranks == 1) return ncclSuccess;
  const int next = (comm->rank + 1) % comm->nranks, prev = (comm->rank + comm->nranks - 1) % comm->nranks;
  std::vector<Connection*> pending;
  for (int ch = 0; ch < comm->nChannels; ++ch) {
    pending.push_back(getConnection(comm, Lane::kRing, ch, prev, false, comm->nSlots));
    pending.push_back(getConnection(comm, Lane::kRing, ch, next, true, comm->nSlots));
  }
  // The abort flag is watched: ncclCommAbort of a non-blocking init ends this wait at once.
  const std::vector<const std::atomic<bool>*> aborts(pending.size(), &comm->abortFlag);  // one per link
  const ConnectOutcome w = connectAll(pending, aborts, nowNs() + param::timeoutMs() * 1000000);
  switch (w.end) {
    case ConnectOutcome::End::kConnected: return ncclSuccess;
    case ConnectOutcome::End::kFailed:
      return setError(comm, w.result, "init of rank %d: connecting rings: %s", comm->rank, w.why.c_str());
    case ConnectOutcome::End::kAborted:
      return setError(comm, ncclRemoteError, "init of rank %d: aborted (ncclCommAbort) while connecting rings",
                      comm->rank);
    case ConnectOutcome::End::kTimedOut: break;
  }
  const bool shm = strcmp(pending[w.link]->backend().transportName(), "shm") == 0;
  return setError(comm, ncclRemoteError, "init of rank %d: ring neighbours %d/%d did not connect within %ld ms%s%s",
                  comm->rank, prev, next, static_cast<long>(param::timeoutMs()), shm ? "; " : "",
                  shm ? kShmReachHint : "");
}

// Ranks on other hosts (or every peer, under NCCL_SHM_DISABLE=1) are reached over the network:
// pick it now, so that a missing or broken network fails the init rather than the first call.
ncclResult_t selectNetworkIfNeeded(ncclComm* comm) {
  bool needed = false;
  for (int p = 0; p < comm->nranks; ++p) needed |= p != comm->rank && usesNetwork(comm, p);
  if (!needed) return ncclSuccess;
  std::string why;
  ncclResult_t r = net::selectNetwork(comm->config.netName.empty() ? nullptr : comm->config.netName.c_str(),
                                      &comm->network, &why);
  if (r != ncclSuccess)
    return setError(comm, r, "init of rank %d: some peers are on other hosts%s, but no network is usable: %s",
                    comm->rank, comm->agreed.shmDisable ? " or NCCL_SHM_DISABLE=1" : "", why.c_str());
  r = comm->network->devices(&comm->netDevices);
  if (r != ncclSuccess || comm->netDevices < 1)
    return setError(comm, r != ncclSuccess ? r : ncclSystemError, "init of rank %d: the %s network has no devices",
                    comm->rank, comm->network->name());
  topo::RankPlacement me{};
  WEFT_CHECK(topo::localRankPlacement("", &me));
  comm->netDeviceOrder = orderNetDevices(netDeviceSites(comm->network, comm->netDevices), me);
  std::string order;
  for (int d : comm->netDeviceOrder) {
    if (!order.empty()) order += ',';
    order += std::to_string(d);
  }
  WEFT_INFO(kLogInit | kLogNet, "rank %d uses the %s network (%d devices; channels take them in the order %s)",
            comm->rank, comm->network->name(), comm->netDevices, order.c_str());
  return ncclSuccess;
}

// Where every rank sits (host, NUMA node, PCI path of its devices), for topology queries and the
// NCCL_TOPO_DUMP_FILE dump. An invalid NCCL_TOPO_FILE fails the init here, naming file and line.
ncclResult_t setupPlacement(ncclComm* comm) {
  const topo::SystemTopology* sys = nullptr;
  WEFT_CHECK(topo::getSystemTopology(&sys));
  comm->placements.assign(comm->nranks, topo::RankPlacement{});
  WEFT_CHECK(topo::localRankPlacement("", &comm->placements[comm->rank]));
  std::string why;
  ncclResult_t r = comm->bootstrap->allGather(comm->placements.data(), sizeof(topo::RankPlacement), &why);
  if (r != ncclSuccess)
    return setError(comm, r, "init of rank %d: exchanging placements failed: %s", comm->rank, why.c_str());
  return topo::topologyDumpIfRequested(comm->rank, comm->placements);
}

// The trace's clock offset for this rank (lifecycle/clock_sync.h). A failure costs the trace its
// alignment, never the communicator: the file then says the offset is unknown.
ncclResult_t noteTraceClock(ncclComm* comm) {
  double offsetUs = 0, uncertaintyUs = -1;
  std::string why;
  if (measureClockOffset(comm->bootstrap.get(), param::timeoutMs(), &offsetUs, &uncertaintyUs, &why) != ncclSuccess) {
    WEFT_WARN("rank %d: WEFT_TRACE_FILE: could not measure the clock offset to rank 0 (%s); the trace is not aligned",
              comm->rank, why.c_str());
    uncertaintyUs = -1;
  }
  if (trace::on()) trace::noteRank(comm->traceRank, comm->nranks, offsetUs, uncertaintyUs);
  return ncclSuccess;
}

// Everything after the rendezvous: learn the other ranks, agree on geometry, map the local peers.
ncclResult_t setupComm(ncclComm* comm, const ncclUniqueId& id) {
  std::string why;
  ncclResult_t r = Bootstrap::create(id, comm->rank, comm->nranks, param::timeoutMs(), comm->initCancel.fd(),
                                     &comm->bootstrap, &why);
  if (r != ncclSuccess)
    return setError(comm, r, "init of rank %d/%d failed: %s", comm->rank, comm->nranks, why.c_str());

  struct Announce {
    RankInfo info;
    uint64_t salt;
    uint64_t tracing;  // this rank writes a trace: then every rank takes part in measuring clocks
  };
  std::vector<Announce> all(comm->nranks);
  Announce& me = all[comm->rank];
  me.info.hostHash = hostHash();
  me.info.machineHash = machineHash();
  me.info.pid = static_cast<int32_t>(getpid());
  me.info.addressSpace = dev::runtime().addressSpace();
  me.info.rank = comm->rank;
  snprintf(me.info.hostName, sizeof me.info.hostName, "%s", hostName().c_str());
  // A GPU build with a usable GPU runs the communicator on the caller's current device (as NCCL
  // does); otherwise, and under WEFT_DEVICE=host, in host mode.
  me.info.device = -1;
  if (dev::runtime().deviceCount() > 0 && dev::runtime().getDevice(&me.info.device) != ncclSuccess)
    return setError(comm, ncclUnhandledCudaError, "init of rank %d: cannot read the current GPU", comm->rank);
  me.salt = randomU64();
  me.tracing = trace::on() ? 1 : 0;
  r = comm->bootstrap->allGather(all.data(), sizeof(Announce), &why);
  if (r != ncclSuccess)
    return setError(comm, r, "init of rank %d: exchanging rank information failed: %s", comm->rank, why.c_str());

  for (const Announce& a : all) comm->ranks.push_back(a.info);
  static const long nCpus = sysconf(_SC_NPROCESSORS_ONLN);
  comm->coresOversubscribed = ranksOnThisMachine(comm) > nCpus;
  comm->spansHosts = !allRanksOnThisHost(comm);
  // Two communicators rendezvousing at one NCCL_COMM_ID address share an id: rank 0's salt keeps
  // their shared-memory names apart.
  comm->commHash = bootstrapIdHash(id) ^ (all[0].salt * 0x9e3779b97f4a7c15ull);
  bool anyTracing = false;
  for (const Announce& a : all) anyTracing |= a.tracing != 0;
  // Decided from what every rank announced, so all of them take part or none does. A communicator
  // split or shrunk from another keeps its parent's trace rank and offset.
  if (anyTracing && !comm->traceDerived) WEFT_CHECK(noteTraceClock(comm));
  // From here on every choice reads the agreed settings: network or shm, channels, FIFO geometry.
  WEFT_CHECK(agreeOnSettings(comm));
  comm->slotBytes = slotBytesFor(comm->agreed);
  comm->nSlots = kSlotsPerFifo;
  const int64_t nch = std::clamp<int64_t>(comm->agreed.nChannels, comm->config.minCTAs, comm->config.maxCTAs);
  comm->nChannels = static_cast<int>(std::clamp<int64_t>(nch, 1, 64));
  comm->p2pRead = comm->agreed.p2pReadEnable;
  WEFT_CHECK(selectNetworkIfNeeded(comm));
  if (me.info.device >= 0) WEFT_CHECK(gpu::setupDevice(comm));
  r = comm->peers.setup(comm->commHash, comm->rank, comm->ranks, comm->bootstrap.get(), &why);
  if (r != ncclSuccess)
    return setError(comm, r, "init of rank %d: shared memory setup failed: %s", comm->rank, why.c_str());
  if (!comm->agreed.runtimeConnect) WEFT_CHECK(connectRingsNow(comm));
  WEFT_CHECK(setupPlacement(comm));
  WEFT_CHECK(setupTuner(comm, param::tunerPlugin()));  // the cost model, NCCL_ALGO/NCCL_PROTO and the tuner plugin
  int nNodes = 0;
  for (size_t r = 0; r < comm->ranks.size(); ++r) {
    bool first = true;
    for (size_t q = 0; q < r; ++q) first &= comm->ranks[q].hostHash != comm->ranks[r].hostHash;
    nNodes += first ? 1 : 0;
  }
  comm->profilerContext = profiler::open(comm->commHash,
                                         comm->config.commName.empty() ? nullptr : comm->config.commName.c_str(),
                                         nNodes, comm->nranks, comm->rank);
  if (comm->profilerContext != nullptr) comm->proxyProfile->attach(comm->profilerContext, comm->rank);
  WEFT_INFO(kLogInit, "comm %p rank %d nranks %d hash %016lx ready: %d channels, FIFO %u x %u bytes, %s",
            static_cast<void*>(comm), comm->rank, comm->nranks, static_cast<unsigned long>(comm->commHash),
            comm->nChannels, comm->nSlots, comm->slotBytes, comm->hostMode ? "host mode" : "GPU");
  return ncclSuccess;
}

void finishInit(ncclComm* comm, ncclResult_t r) {
  if (r == ncclSuccess) {
    comm->setState(CommState::kReady);
    comm->errors.forceAsync(ncclSuccess);
  } else {
    comm->setState(CommState::kFailed);
    comm->errors.forceAsync(r);
  }
}

}  // namespace

ncclComm* commAllocate(int nranks, int rank, const CommConfig& cfg) {
  logVersionBanner();
  auto* comm = new ncclComm();
  comm->rank = rank;
  comm->nranks = nranks;
  comm->traceRank = rank;
  comm->config = cfg;
  comm->errors.forceAsync(ncclInProgress);
  registerComm(comm);
  return comm;
}

ncclResult_t commSetup(ncclComm* comm, const ncclUniqueId& id) {
  ncclResult_t r = setupComm(comm, id);
  finishInit(comm, r);
  // On failure NCCL leaves the handle to the caller; freeing it here would make a later destroy a
  // double free, so the failed communicator stays valid for ncclCommDestroy/Abort.
  return r;
}

namespace {
// parent: the communicator a split or shrink derives from (its trace rank carries over), or null.
ncclResult_t createComm(ncclComm** out, int nranks, const ncclUniqueId& id, int rank, const CommConfig& cfg,
                        const ncclComm* parent) {
  ncclComm* comm = commAllocate(nranks, rank, cfg);
  if (parent != nullptr) {
    comm->traceRank = parent->traceRank;
    comm->traceDerived = true;
  }
  *out = comm;
  if (cfg.blocking == 0) {
    comm->initThread = std::thread([comm, id] { commSetup(comm, id); });
    return ncclInProgress;
  }
  return commSetup(comm, id);
}
}  // namespace

ncclResult_t commCreate(ncclComm** out, int nranks, const ncclUniqueId& id, int rank, const CommConfig& cfg) {
  return createComm(out, nranks, id, rank, cfg, nullptr);
}

ncclResult_t commSplit(ncclComm* parent, int color, int key, ncclComm** out, const CommConfig& cfg) {
  std::string why;
  struct Entry {
    int color, key, rank;
  };
  std::vector<Entry> all(parent->nranks);
  all[parent->rank] = Entry{color, key, parent->rank};
  ncclResult_t r = parent->bootstrap->allGather(all.data(), sizeof(Entry), &why);
  if (r != ncclSuccess) return setError(parent, r, "ncclCommSplit: exchanging colors failed: %s", why.c_str());

  std::vector<Entry> members;
  for (const Entry& e : all)
    if (e.color == color && color != NCCL_SPLIT_NOCOLOR) members.push_back(e);
  std::stable_sort(members.begin(), members.end(),
                   [](const Entry& a, const Entry& b) { return a.key != b.key ? a.key < b.key : a.rank < b.rank; });
  // The first member of each color creates the new communicator's id and shares it.
  std::vector<ncclUniqueId> ids(parent->nranks);
  memset(ids.data(), 0, ids.size() * sizeof(ncclUniqueId));
  if (!members.empty() && members[0].rank == parent->rank) {
    r = bootstrapGetLocalUniqueId(&ids[parent->rank]);
    if (r != ncclSuccess) return setError(parent, r, "ncclCommSplit: could not create the new communicator's id");
  }
  r = parent->bootstrap->allGather(ids.data(), sizeof(ncclUniqueId), &why);
  if (r != ncclSuccess) return setError(parent, r, "ncclCommSplit: exchanging ids failed: %s", why.c_str());
  if (color == NCCL_SPLIT_NOCOLOR) {
    *out = nullptr;
    return ncclSuccess;
  }
  int newRank = 0;
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i].rank == parent->rank) newRank = static_cast<int>(i);
  CommConfig blockingCfg = cfg;
  blockingCfg.blocking = 1;  // the split itself already synchronised; finish it here
  r = createComm(out, static_cast<int>(members.size()), ids[members[0].rank], newRank, blockingCfg, parent);
  if (*out != nullptr) (*out)->config.blocking = cfg.blocking;
  return r;
}

ncclResult_t commShrink(ncclComm* parent, const int* exclude, int nExclude, ncclComm** out, const CommConfig& cfg) {
  std::vector<bool> gone(parent->nranks, false);
  for (int i = 0; i < nExclude; ++i) gone[exclude[i]] = true;
  std::vector<int> survivors;
  for (int r = 0; r < parent->nranks; ++r)
    if (!gone[r]) survivors.push_back(r);
  int newRank = static_cast<int>(std::find(survivors.begin(), survivors.end(), parent->rank) - survivors.begin());
  const int leader = survivors[0];
  const uint64_t seq = ++parent->shrinkCount;
  // The excluded ranks may be dead, so the parent's bootstrap ring cannot be used. The survivors
  // share a host (host mode), so the leader posts the new id in its shared rank block.
  ncclUniqueId id;
  RankBlock* leaderBlock = parent->peers.block(leader);
  if (parent->rank == leader) {
    ncclResult_t r = bootstrapGetLocalUniqueId(&id);
    if (r != ncclSuccess) return setError(parent, r, "ncclCommShrink: could not create the new communicator's id");
    memcpy(&leaderBlock->mailboxId, &id, sizeof id);
    leaderBlock->mailboxSeq.store(seq, std::memory_order_release);
  } else {
    if (leaderBlock == nullptr)
      return setError(parent, ncclInvalidUsage, "ncclCommShrink: rank %d is not on this host", leader);
    const int64_t deadline = nowNs() + param::timeoutMs() * 1000000;
    while (leaderBlock->mailboxSeq.load(std::memory_order_acquire) < seq) {
      // The parent may have failed (that is why it is being shrunk): only the leader's process
      // going away matters here, not the failure mark it set on the parent.
      std::string failure = parent->peers.peerFailure(leader, /*countAborted=*/false);
      if (!failure.empty() && leaderBlock->mailboxSeq.load() < seq)
        return setError(parent, ncclRemoteError, "ncclCommShrink: %s before it shared the new id", failure.c_str());
      if (nowNs() > deadline)
        return setError(parent, ncclRemoteError,
                        "ncclCommShrink: rank %d waited %ld ms for rank %d to share the new communicator's id",
                        parent->rank, static_cast<long>(param::timeoutMs()), leader);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    memcpy(&id, &leaderBlock->mailboxId, sizeof id);
  }
  CommConfig blockingCfg = cfg;
  blockingCfg.blocking = 1;
  ncclResult_t r = createComm(out, static_cast<int>(survivors.size()), id, newRank, blockingCfg, parent);
  if (*out != nullptr) (*out)->config.blocking = cfg.blocking;
  return r;
}

void commJoinInit(ncclComm* comm) {
  if (comm->initThread.joinable()) comm->initThread.join();
}

void commFree(ncclComm* comm) {
  commJoinInit(comm);
  // The rank's file is complete up to here; exit rewrites it with whatever follows.
  if (trace::on() && !comm->traceDerived) trace::flushRank(comm->traceRank);
  unregisterComm(comm);
  gpu::teardownDevice(comm);  // its kernels finish (or give up) before their FIFOs go away
  // Links drain first (their last steps' events stop), then the profiler context ends.
  comm->connections.clear();
  comm->direct.clear();
  comm->proxyProfile->detach();
  profiler::close(comm->profilerContext);
  comm->magic = 0;
  delete comm;
}

void commAbort(ncclComm* comm) {
  comm->abortFlag.store(true, std::memory_order_release);
  gpu::abortDevice(comm);
  // A non-blocking init still waiting in the rendezvous stops now; then the parts it built are
  // safe to touch from this thread.
  comm->initCancel.fire();
  commJoinInit(comm);
  comm->peers.announceFailure(("rank " + std::to_string(comm->rank) + " called ncclCommAbort").c_str());
  if (comm->peers.self() != nullptr) {
    comm->peers.self()->doorbell.fetch_add(1);
    futexWakeAll(&comm->peers.self()->doorbell);
  }
  if (comm->bootstrap) comm->bootstrap->abort();
  // Network peers learn of the abort from their links closing, at once.
  comm->connections.shutdownAll();
  // An operation running on another thread sees the flag within one sleep period.
  const int64_t deadline = nowNs() + 10'000'000'000;
  while (comm->activeOps.load() > 0 && nowNs() < deadline) std::this_thread::sleep_for(std::chrono::microseconds(100));
  commFree(comm);
}

}  // namespace weft
