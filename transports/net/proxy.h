// The network proxy: one thread per process that moves the slots of every network link between
// the local FIFO the executor sees and the network, for all communicators of the process. It keeps
// running after an operation returns (a send is done for the executor once its data sits in the
// local FIFO), so a communicator waits for it to drain before it goes away.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transports/connection.h"
#include "transports/net/network.h"
#include "transports/net/proxy_profile.h"

namespace weft::net {

// One established network link and its local FIFO. Created by NetConnection once the network
// connection is up; from then on only the proxy thread touches the network side.
struct NetLink {
  Network* network = nullptr;
  void* comm = nullptr;     // the plugin's send or receive comm
  void* mhandle = nullptr;  // the FIFO's memory registration
  bool isSender = false;
  FifoView fifo;
  RankBlock* ownerBell = nullptr;  // the executor's doorbell; null once the link is closing
  std::string what;                // "network link rank 0 -> rank 2 (ring lane, channel 0)", for messages
  int64_t drainTimeoutMs = 0;
  // A receiving link that no executor reads: the proxy hands each message to deliver, on its own
  // thread, and frees the slot at once (one-sided puts, src/rma). Empty for FIFO links.
  std::function<void(const unsigned char* data, size_t bytes)> deliver;

  // Proxy state, guarded by the proxy's mutex.
  uint64_t posted = 0, done = 0;  // requests handed to the network / completed
  std::vector<void*> requests;    // one per slot
  enum class Close { kOpen, kDrain, kNow } close = Close::kOpen;
  int64_t drainDeadlineNs = 0;
  bool closed = false;
  std::string failure;  // set once, when the network reports an error
  std::atomic<bool> failed{false};

  // Traced runs (trace/trace.h): the rank whose events these are, the peer, and per slot when its
  // request was posted (0: not traced); a receive's event starts no earlier than the link's last
  // completion, since a receive is posted long before its message is on its way.
  int traceRank = -1, peer = -1;
  std::vector<int64_t> postedNs;
  int64_t lastDoneNs = 0;

  // Profiled runs (proxy_profile.h): the communicator's proxy events and this link's place in
  // them (null for links that deliver), and per slot the handle a network plugin's events hang
  // under.
  std::shared_ptr<ProxyProfile> profile;
  ProxyProfile::Link* profileLink = nullptr;
  std::vector<NetParent> netParents;
};

class Proxy {
 public:
  // This process's proxy, started on first use (a forked child gets its own).
  static Proxy& instance();

  // Hands a connected link to the proxy thread.
  void add(const std::shared_ptr<NetLink>& link);
  // Closes a link. drain: a sending link first delivers what the executor already published (up to
  // its drainTimeoutMs). Returns once the proxy let go of the link's network comm and memory
  // registration, so the caller may free the memory.
  void close(const std::shared_ptr<NetLink>& link, bool drain);
  // Closes a link at the next pass without waiting (communicator failure or abort).
  void shutdown(const std::shared_ptr<NetLink>& link);
  // The doorbell executors ring after they publish or release a slot of a network link.
  RankBlock* bell() { return &bell_; }
  // An operation on network links starts: poll the network eagerly for a while.
  void kick();
  // An executor spins inside an operation and moves the network itself (tryProgress) until it
  // removes itself; while one does, a ringing network need not wake the proxy.
  void addPoller() { pollers_.fetch_add(1, std::memory_order_seq_cst); }
  // operationDone: the executor returns from an operation (the proxy is rung only if sends are
  // still on their way); otherwise it goes to sleep inside one and the proxy takes over at once.
  void removePoller(bool operationDone);
  // GPU kernels publish and release network slots without ringing the doorbell: while a GPU
  // communicator with network links exists, the proxy keeps polling (naps, never long sleeps).
  void holdPolling() {
    gpuHolders_.fetch_add(1, std::memory_order_relaxed);
    kick();
  }
  void releasePolling() { gpuHolders_.fetch_sub(1, std::memory_order_relaxed); }
  // One pass over every link from the calling thread, unless another thread is in one now.
  // An executor waiting on the network calls it, so a message moves without a thread switch to
  // the proxy. Returns true if anything moved.
  bool tryProgress();
  std::string failureOf(const NetLink& link);

 private:
  Proxy();
  void loop();
  void setEventMode(bool on);
  // Rings the doorbell whether or not the proxy says it sleeps.
  void wake();
  // An executor polls, and every network rings (so no link needs the proxy's polling).
  bool executorsMoveAll() const;
  // Sleeps until rung (or a safety timeout), looking once more first; true if that look moved.
  bool sleepUntilRung(bool hot);
  // forExecutor: an executor's pass (tryProgress), which takes at most one message per receiving
  // link and returns to its program.
  bool progress(NetLink& link, bool* busy, bool forExecutor = false);
  // One pass over every link (mutex_ held); true if anything moved.
  bool passAll(bool* busy, bool forExecutor = false);
  // A sending link with a published slot not yet delivered (mutex_ held).
  static bool sendsPending(const NetLink& link);
  void fail(NetLink& link, ncclResult_t r, const char* call);
  void closeNow(NetLink& link);
  // Profiled runs: records an ncclProfilerProxyCtrl* state on the ProxyCtrl event of every
  // communicator with a profiled link here, when it differs from the last one (proxy thread,
  // mutex_ held). sleepOnBell brackets a sleep with Sleep and, when rung, Wakeup (mutex_ not held).
  void recordCtrl(int state);
  void sleepOnBell(uint32_t seen, int64_t timeoutNs);

  RankBlock bell_{};
  std::mutex mutex_;
  std::condition_variable closedCv_;
  std::vector<std::shared_ptr<NetLink>> links_;
  std::vector<Network*> networks_;              // every network a link came from
  std::vector<const ProgressEvents*> ringing_;  // the hooks of those that can ring
  std::atomic<bool> allRing_{true};             // every one of them can
  std::atomic<int> pollers_{0};
  bool eventMode_ = false;  // proxy thread only
  int ctrlState_ = -1;      // the last ProxyCtrl state recorded (mutex_)
  std::atomic<int64_t> hotUntilNs_{0};
  std::atomic<int> gpuHolders_{0};
  std::thread thread_;
};

}  // namespace weft::net
