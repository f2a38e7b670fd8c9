// The communicator. It owns its parts (bootstrap, local peers, connections, user reduction ops,
// registrations) rather than holding every field itself; each part lives in its own header.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "base/params.h"
#include "bootstrap/bootstrap.h"
#include "comm/config.h"
#include "comm/device_window_table.h"
#include "comm/local_peers.h"
#include "comm/redop_table.h"
#include "comm/wait_state.h"
#include "comm/window_table.h"
#include "nccl.h"
#include "sockets/socket.h"
#include "topology/placement.h"
#include "transports/connection_table.h"
#include "transports/net/network.h"
#include "transports/net/proxy_profile.h"
#include "transports/shm/direct_area.h"

namespace weft {

constexpr uint64_t kCommMagic = 0x5745465443304d4dull;  // "WEFTC0MM"

enum class CommState : int {
  kInitializing,  // a non-blocking init is still running
  kReady,
  kFinalized,  // ncclCommFinalize was called: no new operations
  kRevoked,    // ncclCommRevoke: no new operations; destroy, split and shrink still allowed
  kSuspended,  // ncclCommSuspend: no operations until ncclCommResume; destroy and abort allowed
  kFailed,     // init failed, or an operation failed and left the peers out of step
};

// A buffer registered with ncclCommRegister; its address is the handle.
struct Registration {
  void* buff;
  size_t size;
};

namespace gpu {
class DeviceState;  // gpu_executor/device_state.h: the communicator holds it, the GPU executor uses it
struct DeviceStateDeleter {
  void operator()(DeviceState* s) const;  // defined in gpu_executor/device_state.cc
};
}  // namespace gpu

class Tuner;  // tuning/tuner.h
struct TunerDeleter {
  void operator()(Tuner* t) const;  // defined in comm/comm_algorithms.cc
};

// What every rank learned about every other at init.
struct RankInfo {
  uint64_t hostHash;
  uint64_t machineHash;  // base/host_identity.h: ranks with the same one share cores
  int32_t pid;
  int32_t rank;
  char hostName[64];  // for messages about this rank
  int32_t device;     // the rank's GPU, -1 in host mode
  // Ranks with the same one reach each other's memory by address (dev::Runtime::addressSpace):
  // the process id, except in the kernel-emulation tests' ranks of their own.
  int64_t addressSpace;
};

}  // namespace weft

struct ncclComm {
  uint64_t magic = weft::kCommMagic;
  int rank = -1;
  int nranks = 0;
  uint64_t commHash = 0;  // unique per communicator, equal on all its ranks
  // The rank this communicator's events carry in the trace (trace/trace.h): its own rank, or for
  // one split or shrunk from another (traceDerived), the parent's, so a process keeps one row.
  int traceRank = -1;
  bool traceDerived = false;
  void* profilerContext = nullptr;  // the profiler plugin's context (trace/profiler.h), null without one
  // Its profiler events on network links (ProxyOp, ProxyStep, NetPlugin), attached to the context.
  std::shared_ptr<weft::net::ProxyProfile> proxyProfile = std::make_shared<weft::net::ProxyProfile>();
  // Every Agreed parameter (param_table.h) as rank 0 set it: what steers this communicator's
  // collectives, the same on every rank (comm/agreement.h). Never read those per process.
  weft::param::Agreed agreed = weft::param::localAgreed();  // this rank's proposal until init agrees
  int nChannels = 1;                                        // ring channels, from agreed settings
  uint32_t slotBytes = 0;                                   // FIFO slot size, from the agreed NCCL_BUFFSIZE
  uint32_t nSlots = 8;
  bool hostMode = true;
  // More ranks of this communicator run on this machine (RankInfo::machineHash) than it has online
  // CPUs: a waiting rank yields at once rather than spin on a core a peer needs, and shared-memory
  // FIFOs keep their payloads at the slots' starts (transports/connection.h: spreadOffset).
  bool coresOversubscribed = false;
  // Some rank runs on another host (RankInfo::hostHash): the same answer on every rank.
  bool spansHosts = false;
  bool p2pRead = false;     // P2P FIFOs live with the sender (read mode): the agreed NCCL_P2P_READ_ENABLE
  weft::CommConfig config;  // minCTAs/maxCTAs are rank 0's once init agreed on them
  std::vector<weft::RankInfo> ranks;

  std::atomic<int> state{static_cast<int>(weft::CommState::kInitializing)};
  std::atomic<bool> abortFlag{false};
  std::atomic<int> activeOps{0};  // operations executing right now (ncclCommAbort waits for them)
  // Operations issued, for "stuck at op #N" messages. Atomic: weftCommDumpState reads it from any
  // thread while the owning thread counts.
  std::atomic<uint64_t> opCount{0};
  // Sequence spaces of the op stamps (comm/op_stamp.h): collectives issued, and per peer the
  // sends to it and the receives from it (sized nranks on first use).
  uint64_t collCount = 0;
  std::vector<uint64_t> sendCount, recvCount;
  // ncclWaitSignal (src/rma): per peer, the signals from it that waits have consumed so far.
  std::vector<uint64_t> signalsWaited;
  // Registered windows, shared with the network proxy's deliveries of one-sided puts.
  std::shared_ptr<weft::WindowTable> windows = std::make_shared<weft::WindowTable>();
  // This rank's latest stamps (every sequence space), so that it can still answer a peer's
  // slow-path stamp exchange (src/host_executor/stamp_exchange.h) about an operation it finished.
  static constexpr int kRecentStamps = 16;
  weft::OpStamp recentStamps[kRecentStamps] = {};
  uint32_t recentStampCount = 0;
  std::atomic<int64_t> stampsDrainedNs{0};  // when this rank last took stamp notes off its bootstrap
  weft::WaitState waits;                    // where the host executor waits in this communicator (weftCommDumpState)
  uint64_t shrinkCount = 0;
  // ncclCommGetUniqueId's id, until the ncclCommGrow that uses it (lifecycle/comm_grow.h).
  bool growIdPending = false;
  ncclUniqueId growId{};

  weft::ErrorState errors;
  std::unique_ptr<weft::Bootstrap> bootstrap;
  weft::LocalPeers peers;
  weft::ConnectionTable connections;
  weft::net::Network* network = nullptr;  // set when some peer is reached over the network
  int netDevices = 0;
  std::vector<int> netDeviceOrder;                    // the devices channels use, closest first (comm/net_devices.h)
  std::vector<weft::topo::RankPlacement> placements;  // every rank's, gathered at init
  weft::DirectAreas direct{
      &agreed.ddaSendbufBytes};  // staging areas of the direct lane (DDA, low precision), made on first use
  weft::RedOpTable redOps;
  std::thread initThread;         // a non-blocking init runs here
  weft::CancelEvent initCancel;   // ncclCommAbort fires it to stop an init that is still waiting
  std::vector<uint64_t> scratch;  // grow-only scratch for algorithms that gather inputs first
  // Its bytes, for ncclCommMemStats from any thread while the communicator's own thread grows it.
  std::atomic<size_t> scratchBytes{0};
  std::unique_ptr<weft::Tuner, weft::TunerDeleter> tuner;  // cost table, settings, plugin (set at init)
  std::mutex regMutex;
  std::vector<std::unique_ptr<weft::Registration>> registrations;  // ncclCommRegister handles
  std::vector<std::unique_ptr<ncclWindow_vidmem>> windowHandles;   // ncclCommWindowRegister handles
  // GPU ranks in several processes: where their shared windows are (made at the first such window).
  std::unique_ptr<weft::DeviceWindowTable> deviceWindows;
  // How many of both there are, read without the lock by every collective (comm/shared_input.h).
  std::atomic<int> registeredBuffers{0};
  // GPU communicators only (hostMode false): device resources of the GPU executor.
  std::unique_ptr<weft::gpu::DeviceState, weft::gpu::DeviceStateDeleter> gpu;
  int64_t gpuTimerTicksPerMs = 0;
  bool gpuErrorReported = false;
  bool gpuHoldsProxy = false;  // keeps the network proxy polling for this comm's kernels

  // Point-to-point FIFOs carry one peer's messages each, and a rank may hold one per peer; a tree
  // channel holds up to three (parent, two children) per tree, two trees per channel. Those lanes
  // get half as many slots (same slot size, so the same pieces), which keeps an 8-rank AlltoAll's
  // shared memory near 44 MiB. The one-sided links (one per network peer each way) get half too.
  // Rings keep the full depth for their pipelines.
  uint32_t laneSlots(weft::Lane lane) const {
    return lane == weft::Lane::kP2p || lane == weft::Lane::kTree || lane == weft::Lane::kRma ? (nSlots + 1) / 2
                                                                                             : nSlots;
  }

  weft::CommState getState() const { return static_cast<weft::CommState>(state.load(std::memory_order_acquire)); }
  void setState(weft::CommState s) {
    if (s == weft::CommState::kFailed) errors.rememberFailure();
    state.store(static_cast<int>(s), std::memory_order_release);
  }
};
