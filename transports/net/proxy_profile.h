// A communicator's profiler events on its network links (NCCL_PROFILER_PLUGIN, trace/profiler.h):
// ProxyOp, ProxyStep, and the NetPlugin events a network plugin opens under a step.
//
// The proxy moves slots without knowing operations, but every message carries its sender's stamp
// (fifo.h), and the stamp names the operation. The enqueue layer registers each operation's event
// and how many messages its program moves over each (lane, channel, peer, direction); the proxy
// hooks below find the operation from a message's stamp. So:
//   ProxyOp    one operation's traffic over one link, started at its first message, with nSteps
//              the messages the program moves there and chunkSize the slot size;
//   ProxyStep  one message. A send starts when the proxy takes the published slot
//              (SendPeerWait_v4), is in the network's hands from SendWait on, and stops when the
//              network reports it sent. A receive starts when its message has arrived and stops
//              when the executor consumed it (RecvGPUWait in between): Weft posts receives before
//              it knows which operation will fill them, so a RecvWait phase has no start to report.
//              A message that came before this rank started its operation (a peer ahead) gets its
//              step when the operation starts.
//   ProxyCtrl  the proxy thread's state, one event per communicator (NCCL has a proxy thread per
//              communicator; Weft's one thread serves every communicator of the process, so each
//              profiled one with a network link gets the thread's states): Active while it moves
//              messages or has some in flight, Idle when it has none, Sleep when it sleeps and
//              Wakeup when it is rung (a sleep that times out with nothing to do records nothing).
//              Started at the first state, stopped when the communicator goes.
// An operation's event stops when the executor is done with it and the last ProxyOp under it has
// stopped, whichever comes last, as in NCCL. Everything is guarded by one mutex per communicator;
// without a plugin nothing here runs (the proxy tests profiler::active() first).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "nccl.h"
#include "transports/fifo.h"

namespace weft::net {

// The three numberings of a rank's operations (comm/op_stamp.cc): collectives share one; sends
// to and receives from each peer have their own.
enum class OpSpace : uint8_t { kColl = 0, kSend = 1, kRecv = 2 };
inline uint64_t opKey(OpSpace space, int peer, uint32_t op) {
  return (uint64_t(space) << 62) | (uint64_t(uint32_t(peer) & 0x3fffffffu) << 32) | op;
}
// The operation of this rank that a message on a link with `peer` belongs to, from the sender's
// stamp (a Send's messages arrive as this rank's Recv).
inline uint64_t messageKey(const OpStamp& s, int peer, bool linkIsSender) {
  if (s.kind != kStampKindSend) return opKey(OpSpace::kColl, 0, s.op);
  return opKey(linkIsSender ? OpSpace::kSend : OpSpace::kRecv, peer, s.op);
}

// What one operation's program moves over one link.
struct LinkTraffic {
  int lane = 0, channel = 0, peer = 0;
  bool isSend = false;
  int messages = 0;
};

class ProxyProfile {
 public:
  struct Link;

  // The communicator's plugin context (null: none); events start only once it is set.
  void attach(void* context, int rank);
  // The communicator goes away: every open event stops now, and the hooks do nothing after.
  void detach();
  bool on() const { return context_.load(std::memory_order_acquire) != nullptr; }

  // The enqueue layer: an operation whose event is `handle` (null when the plugin declined it)
  // runs, moving `traffic`; the executor is done with it.
  void opStarted(uint64_t key, void* handle, std::vector<LinkTraffic> traffic);
  void opFinished(uint64_t key);

  // A network link of this communicator (its receives handed to an executor, not delivered).
  Link* addLink(int lane, int channel, int peer, bool isSend, int chunkBytes);
  // The link closed: its open events stop, and its hooks do nothing from now on.
  void dropLink(Link* l);

  // The proxy, with its own mutex held; `msg` is the link's message number.
  void sendReady(Link* l, uint64_t key, uint64_t msg, size_t bytes);  // before the isend
  void sendPosted(Link* l, uint64_t msg);                             // the network took it
  void sendDone(Link* l, uint64_t msg);
  void recvArrived(Link* l, uint64_t key, uint64_t msg, size_t bytes);
  void recvConsumed(Link* l, uint64_t consumed);  // messages below `consumed` are consumed
  // The step event of message `msg`, or null.
  void* stepEvent(Link* l, uint64_t msg);
  // A network plugin opens a NetPlugin event under `step` (its profiler callback); null when the
  // communicator is gone or the plugin does not want the event.
  void* startNetEvent(void* step, int64_t pluginId, void* data);

  // The proxy thread's state (an ncclProfilerProxyCtrl* state): recorded on this communicator's
  // ProxyCtrl event, started on the first call, unless it is the state recorded last.
  void proxyState(int state);

 private:
  struct OpRecord {
    void* handle = nullptr;
    std::vector<LinkTraffic> traffic;
    bool executorDone = false;
    int openProxyOps = 0;
    // Messages its program sends that no step has started yet: the executor returns once its
    // sends sit in the FIFOs, and the proxy still needs the operation for them.
    int pendingSends = 0;
  };
  struct ProxyOpRec {
    uint64_t key = 0;
    void* handle = nullptr;
    int expected = 0, started = 0, open = 0;
    bool superseded = false;  // a later operation's message came over the link
    bool stopped = false;
  };
  struct StepRec {
    uint64_t msg = 0;
    size_t bytes = 0;
    void* handle = nullptr;
    ProxyOpRec* op = nullptr;
    bool posted = false;
  };

  struct Early {
    uint64_t key = 0, msg = 0;
    size_t bytes = 0;
  };

  ProxyOpRec* proxyOpFor(Link* l, uint64_t key);
  void startStep(Link* l, ProxyOpRec* op, uint64_t msg, size_t bytes, int state);
  void stopStep(Link* l, size_t index);
  void maybeStopProxyOp(Link* l, ProxyOpRec* op);
  void settle(uint64_t key);
  void stopLink(Link* l);
  void stopAll();

  std::mutex mutex_;
  std::atomic<void*> context_{nullptr};
  int rank_ = -1;
  void* ctrl_ = nullptr;  // the ProxyCtrl event, once started
  int ctrlState_ = -1;    // the state it last recorded
  std::unordered_map<uint64_t, OpRecord> ops_;
  std::vector<std::unique_ptr<Link>> links_;
};

struct ProxyProfile::Link {
  int lane = 0, channel = 0, peer = 0, chunkBytes = 0;
  bool isSend = false;
  bool dropped = false;
  std::deque<std::unique_ptr<ProxyOpRec>> ops;  // oldest first; stopped ones are trimmed
  std::deque<StepRec> steps;                    // open steps, by message number
  std::deque<Early> early;                      // messages that came before their operation
};

// What a network plugin gets as the profiler handle of one isend (phandle): the communicator and
// the message's step event, which its NetPlugin events hang under. One per FIFO slot of a link.
struct NetParent {
  ProxyProfile* profile = nullptr;
  void* step = nullptr;
};

// The profiler callback every network plugin gets at init (ncclProfilerCallback_t): pHandle is a
// NetParent, or null (a receive: Weft posts it before it knows the operation, so it has no step).
ncclResult_t netProfilerCallback(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData);

}  // namespace weft::net
