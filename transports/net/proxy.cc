#include "transports/net/proxy.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "trace/profiler.h"
#include "trace/trace.h"
#include "transports/futex.h"

namespace weft::net {
namespace {

// A network that cannot ring the proxy (a plugin) is polled: with requests in flight the proxy
// yields for kSpinNs after the last progress, then naps kNapNs at a time, then, with nothing in
// flight for the last kHotNs, sleeps until an executor rings or kIdleSleepNs pass.
//
// A network that rings (ProgressEvents: the Socket network) is never polled by the proxy. While an
// executor spins inside an operation it moves the network itself (tryProgress), and the proxy
// sleeps; once no executor does, the network rings the proxy whenever a request moves (event
// mode), with kEventSleepNs as a safety net. A yield or a short-timer poll is what loses on a busy
// machine: a yield hands the core away for a whole time slice, and a thread that polls often uses
// its share of the core, so the scheduler no longer runs it promptly when it wakes. A thread that
// sleeps until it is rung is run at once.
constexpr int64_t kSpinNs = 200 * 1000;
constexpr int64_t kNapNs = 50 * 1000;
constexpr int64_t kHotNs = 20 * 1000 * 1000;
constexpr int64_t kIdleSleepNs = 2 * 1000 * 1000;
constexpr int64_t kEventSleepNs = 1000 * 1000;

// This process's proxy. A forked child does not inherit the parent's proxy thread: the fork
// handlers below clear the pointer in the child, which then starts its own (the parent's object
// is left alone, as its mutex may have been held at the fork). Read without the lock on every
// operation: a pid comparison there was a getpid() system call per operation.
std::atomic<Proxy*> gProxy{nullptr};
std::mutex gProxyMutex;
std::once_flag gForkHandlers;

void lockForFork() { gProxyMutex.lock(); }
void unlockInParent() { gProxyMutex.unlock(); }
void forgetInChild() {
  gProxy.store(nullptr, std::memory_order_relaxed);
  gProxyMutex.unlock();
}

}  // namespace

Proxy& Proxy::instance() {
  if (Proxy* p = gProxy.load(std::memory_order_acquire)) return *p;
  std::call_once(gForkHandlers, [] { pthread_atfork(lockForFork, unlockInParent, forgetInChild); });
  std::lock_guard<std::mutex> lock(gProxyMutex);
  if (gProxy.load(std::memory_order_relaxed) == nullptr) gProxy.store(new Proxy(), std::memory_order_release);
  return *gProxy.load(std::memory_order_relaxed);
}

Proxy::Proxy() {
  thread_ = std::thread([this] { loop(); });
  // Lives as long as the process: links of communicators that were never destroyed keep their
  // memory until exit.
  thread_.detach();
}

void Proxy::add(const std::shared_ptr<NetLink>& link) {
  link->requests.assign(link->fifo.nslots, nullptr);
  link->netParents.assign(link->fifo.nslots, NetParent{});
  {
    std::lock_guard<std::mutex> lock(mutex_);
    links_.push_back(link);
    // A profiled communicator's ProxyCtrl event starts with the thread's current state, so that a
    // communicator gone before the next change still has one.
    if (link->profileLink != nullptr && link->profile != nullptr && profiler::active())
      link->profile->proxyState(ctrlState_ >= 0 ? ctrlState_ : int(ncclProfilerProxyCtrlIdle));
    if (std::find(networks_.begin(), networks_.end(), link->network) == networks_.end()) {
      networks_.push_back(link->network);
      const ProgressEvents* events = link->network->progressEvents();
      if (events != nullptr) {
        events->setBell(&bell_);
        ringing_.push_back(events);
      } else {
        allRing_.store(false, std::memory_order_relaxed);
      }
    }
  }
  kick();
}

void Proxy::removePoller(bool operationDone) {
  bool handOver = true;
  if (operationDone) {
    // Hand over only what is still on its way out: a peer may wait for it while this rank's
    // program does something else. Receives posted ahead need nobody until the next operation,
    // or the proxy's next timed look, so receiving links are not passed here: their test is a
    // recv call that finds nothing between operations (about 1 us of every small operation over
    // TCP).
    std::lock_guard<std::mutex> lock(mutex_);
    bool busy = false;
    for (auto& l : links_)
      if (l->isSender) (void)progress(*l, &busy);
    handOver = std::any_of(links_.begin(), links_.end(), [](const auto& l) { return sendsPending(*l); });
  }
  // The last poller leaving: the proxy sleeps without announcing it while executors poll (see
  // sleepUntilRung), so ring whether or not it says it sleeps.
  if (pollers_.fetch_sub(1, std::memory_order_seq_cst) == 1 && handOver) wake();
}

bool Proxy::executorsMoveAll() const {
  return pollers_.load(std::memory_order_seq_cst) > 0 && allRing_.load(std::memory_order_relaxed) &&
         gpuHolders_.load(std::memory_order_relaxed) == 0;
}

void Proxy::wake() {
  bell_.doorbell.fetch_add(1, std::memory_order_seq_cst);
  futexWakeAll(&bell_.doorbell);
}

void Proxy::setEventMode(bool on) {
  if (on == eventMode_) return;
  eventMode_ = on;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const ProgressEvents* events : ringing_) events->setEventMode(on);
}

bool Proxy::sleepUntilRung(bool hot) {
  uint32_t seen = bell_.doorbell.load(std::memory_order_seq_cst);
  if (pollers_.load(std::memory_order_seq_cst) > 0) {
    // Executors move the network: sleep unannounced, so that their publishes and releases do not
    // wake this thread to compete with them for the core. The last one to leave rings anyway
    // (removePoller), and its ring comes after `seen` was read, so it is not missed.
    setEventMode(false);
    sleepOnBell(seen, hot ? kEventSleepNs : kIdleSleepNs);
    return false;
  }
  bell_.sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // After announcing the sleep (the networks ring only a sleeper): event mode, then one more look,
  // as a ring before the announcement was not sent.
  setEventMode(true);
  bool moved = false, busy = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    moved = passAll(&busy);
  }
  if (!moved) sleepOnBell(seen, hot || busy ? kEventSleepNs : kIdleSleepNs);
  bell_.sleeping.store(0, std::memory_order_relaxed);
  return moved;
}

void Proxy::recordCtrl(int state) {
  if (!profiler::active() || state == ctrlState_) return;
  ctrlState_ = state;
  std::vector<ProxyProfile*> told;  // a communicator has several links
  for (const auto& l : links_) {
    ProxyProfile* p = l->profile.get();
    if (l->profileLink == nullptr || p == nullptr || std::find(told.begin(), told.end(), p) != told.end()) continue;
    told.push_back(p);
    p->proxyState(state);
  }
}

void Proxy::sleepOnBell(uint32_t seen, int64_t timeoutNs) {
  const bool profiling = profiler::active();
  if (profiling) {
    std::lock_guard<std::mutex> lock(mutex_);
    recordCtrl(ncclProfilerProxyCtrlSleep);
  }
  futexWait(&bell_.doorbell, seen, timeoutNs);
  // A sleep that times out with nothing to do records nothing more: only a ring wakes it.
  if (profiling && bell_.doorbell.load(std::memory_order_acquire) != seen) {
    std::lock_guard<std::mutex> lock(mutex_);
    recordCtrl(ncclProfilerProxyCtrlWakeup);
  }
}

void Proxy::kick() {
  hotUntilNs_.store(nowNs() + kHotNs, std::memory_order_relaxed);
  ringIfSleeping(&bell_);
}

void Proxy::close(const std::shared_ptr<NetLink>& link, bool drain) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!link->closed) {
    // A link already told to close at once (abort, failure) is not drained after all.
    if (link->close != NetLink::Close::kNow)
      link->close = drain && link->isSender && !link->failed.load() ? NetLink::Close::kDrain : NetLink::Close::kNow;
    link->drainDeadlineNs = nowNs() + link->drainTimeoutMs * 1000000;
  }
  lock.unlock();
  kick();
  wake();  // even from a sleep executors do not ring (sleepUntilRung)
  lock.lock();
  const auto limit = std::chrono::milliseconds(link->drainTimeoutMs + 5000);
  if (!closedCv_.wait_for(lock, limit, [&] { return link->closed; }))
    WEFT_WARN("%s: the network proxy did not release the link in time; leaving it open", link->what.c_str());
  // Whatever happened, the executor's doorbell must not be touched any more.
  link->ownerBell = nullptr;
}

void Proxy::shutdown(const std::shared_ptr<NetLink>& link) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!link->closed) link->close = NetLink::Close::kNow;
  }
  kick();
  wake();
}

std::string Proxy::failureOf(const NetLink& link) {
  if (!link.failed.load(std::memory_order_acquire)) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  return link.failure;
}

void Proxy::fail(NetLink& link, ncclResult_t r, const char* call) {
  std::string detail = takeFailureDetail();
  link.failure = link.what + ": the " + link.network->name() + " network failed (" + call + " returned " +
                 ncclGetErrorString(r) +
                 (detail.empty() ? "; the peer process or its host may be gone)" : ": " + detail + ")");
  // Not a warning by itself: a peer that destroyed its communicator closes its links too. The
  // executor reports the failure if an operation needed the link.
  WEFT_INFO(kLogNet, "%s", link.failure.c_str());
  link.failed.store(true, std::memory_order_release);
  closeNow(link);
}

void Proxy::closeNow(NetLink& link) {
  if (link.closed) return;
  if (link.mhandle != nullptr) (void)link.network->deregMr(link.comm, link.mhandle);
  if (link.isSender)
    (void)link.network->closeSend(link.comm);
  else
    (void)link.network->closeRecv(link.comm);
  link.mhandle = link.comm = nullptr;
  link.closed = true;
  // Wake the executor so that it sees the failure (or the closed link) now.
  if (link.ownerBell != nullptr) ringIfSleeping(link.ownerBell);
  link.ownerBell = nullptr;
  closedCv_.notify_all();
}

bool Proxy::sendsPending(const NetLink& link) {
  if (!link.isSender || link.closed) return false;
  if (link.posted > link.done) return true;
  return link.fifo.slots[link.posted % link.fifo.nslots].seq.load(std::memory_order_acquire) == link.posted + 1;
}

namespace {

void notePosted(NetLink& link, uint32_t slot) {
  if (link.postedNs.empty()) link.postedNs.assign(link.fifo.nslots, 0);
  link.postedNs[slot] = nowNs();
}

// One "net" event per message (trace/trace.h); the stamp trailer is not counted.
void traceDone(NetLink& link, uint32_t slot, size_t size) {
  const int64_t now = nowNs();
  const int64_t start = link.isSender ? link.postedNs[slot] : std::max(link.postedNs[slot], link.lastDoneNs);
  link.postedNs[slot] = 0;
  link.lastDoneNs = now;
  trace::Args a;
  a.num("peer", link.peer).num("bytes", static_cast<int64_t>(size > sizeof(OpStamp) ? size - sizeof(OpStamp) : 0));
  a.str("network", link.network->name());
  trace::record(trace::Cat::kNet, link.traceRank, link.isSender ? "net send" : "net recv", start, now, a.take());
}

bool profiled(const NetLink& link) { return link.profileLink != nullptr && profiler::active(); }

// A send's step starts as the proxy takes its slot; returns what the network gets as its
// profiler handle (null when the message has no step event).
void* profileSendReady(NetLink& link, uint32_t slot, const OpStamp& stamp, uint32_t bytes) {
  link.profile->sendReady(link.profileLink, messageKey(stamp, link.peer, true), link.posted, bytes);
  NetParent& parent = link.netParents[slot];
  parent.profile = link.profile.get();
  parent.step = link.profile->stepEvent(link.profileLink, link.posted);
  return parent.step != nullptr ? &parent : nullptr;
}

}  // namespace

// One pass over one link. Returns true if anything moved; *busy when requests are in flight.
bool Proxy::progress(NetLink& link, bool* busy, bool forExecutor) {
  if (link.closed) return false;
  if (link.close == NetLink::Close::kNow) {
    closeNow(link);
    return true;
  }
  FifoView& f = link.fifo;
  bool moved = false, ring = false;
  ncclResult_t r;
  if (link.isSender) {
    // Hand every slot the executor published to the network, in order.
    while (link.posted - link.done < f.nslots) {
      const uint32_t i = link.posted % f.nslots;
      SlotHeader& s = f.slots[i];
      if (s.seq.load(std::memory_order_acquire) != link.posted + 1) break;
      const uint32_t bytes = s.bytes;
      // The network moves bytes only: the slot header's stamp travels as a trailer after the
      // payload (an inline message moves to the slot's data area first). The slot is ours until
      // the send completes, and a retried isend rewrites the same bytes.
      unsigned char* slot = f.data + size_t(i) * f.slotBytes;
      if (bytes <= kInlineBytes) memcpy(slot, s.inl, bytes);
      memcpy(slot + bytes, &s.stamp, sizeof(OpStamp));
      void* req = nullptr;
      void* phandle = profiled(link) ? profileSendReady(link, i, s.stamp, bytes) : nullptr;
      if ((r = link.network->isendProfiled(link.comm, slot, bytes + sizeof(OpStamp), 0, link.mhandle, phandle, &req)) !=
          ncclSuccess) {
        fail(link, r, "isend");
        return true;
      }
      if (req == nullptr) break;
      if (profiled(link)) link.profile->sendPosted(link.profileLink, link.posted);
      link.requests[i] = req;
      if (trace::on()) notePosted(link, i);
      ++link.posted;
      moved = true;
    }
  } else {
    // Keep a receive posted in every slot the executor has consumed.
    const uint64_t consumed = f.head->consumed.load(std::memory_order_acquire);
    if (profiled(link)) link.profile->recvConsumed(link.profileLink, consumed);
    while (link.posted < consumed + f.nslots) {
      const uint32_t i = link.posted % f.nslots;
      void* req = nullptr;
      if ((r = link.network->irecv(link.comm, f.data + size_t(i) * f.slotBytes, f.slotBytes, 0, link.mhandle, &req)) !=
          ncclSuccess) {
        fail(link, r, "irecv");
        return true;
      }
      if (req == nullptr) break;
      link.requests[i] = req;
      if (trace::on()) notePosted(link, i);
      ++link.posted;
      moved = true;
    }
  }
  // Requests complete in the order they were posted.
  while (link.done < link.posted) {
    const uint32_t i = link.done % f.nslots;
    int done = 0;
    size_t size = 0;
    if ((r = link.network->test(link.requests[i], &done, &size)) != ncclSuccess) {
      fail(link, r, "test");
      return true;
    }
    if (!done) break;
    link.requests[i] = nullptr;
    if (!link.postedNs.empty() && link.postedNs[i] != 0) traceDone(link, i, size);
    if (link.isSender && profiled(link)) link.profile->sendDone(link.profileLink, link.done);
    ++link.done;
    if (link.isSender) {
      f.head->consumed.store(link.done, std::memory_order_release);
    } else {
      SlotHeader& s = f.slots[i];
      const unsigned char* slot = f.data + size_t(i) * f.slotBytes;
      if (size < sizeof(OpStamp)) {
        fail(link, ncclRemoteError, "irecv (a message shorter than its stamp trailer)");
        return true;
      }
      // Strip the sender's stamp (see the sending side) back into the slot header.
      size -= sizeof(OpStamp);
      if (link.deliver) {  // nobody reads this FIFO: hand the message over and free the slot
        link.deliver(slot, size);
        f.head->consumed.store(link.done, std::memory_order_release);
        moved = true;
        continue;
      }
      memcpy(&s.stamp, slot + size, sizeof(OpStamp));
      // Before the executor can see it, so that its step exists when it is consumed.
      if (profiled(link))
        link.profile->recvArrived(link.profileLink, messageKey(s.stamp, link.peer, false), link.done - 1, size);
      if (size <= kInlineBytes) memcpy(s.inl, slot, size);
      s.bytes = static_cast<uint32_t>(size);
      s.seq.store(link.done, std::memory_order_release);
      if (forExecutor) {
        // The executor that called wants this message now: testing the next receive would be a
        // recv call that mostly finds nothing, paid before it gets this one. Its next pass goes on.
        moved = ring = true;
        break;
      }
    }
    moved = ring = true;
  }
  if (ring && link.ownerBell != nullptr) ringIfSleeping(link.ownerBell);
  if (link.posted > link.done) *busy = true;
  if (link.close == NetLink::Close::kDrain) {
    const bool published = f.slots[link.posted % f.nslots].seq.load(std::memory_order_acquire) == link.posted + 1;
    if (link.posted == link.done && !published) {
      closeNow(link);
    } else if (nowNs() > link.drainDeadlineNs) {
      WEFT_WARN("%s: closing with %llu messages not delivered after %lld ms", link.what.c_str(),
                static_cast<unsigned long long>(link.posted - link.done + (published ? 1 : 0)),
                static_cast<long long>(link.drainTimeoutMs));
      closeNow(link);
    }
    moved = true;
  }
  return moved;
}

bool Proxy::tryProgress() {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  bool busy = false;
  return passAll(&busy, /*forExecutor=*/true);
}

bool Proxy::passAll(bool* busy, bool forExecutor) {
  bool moved = false;
  for (auto& l : links_) moved |= progress(*l, busy, forExecutor);
  return moved;
}

void Proxy::loop() {
  trace::nameThread("proxy");
  int64_t idleSince = 0;
  for (;;) {
    bool moved = false, busy = false;
    if (executorsMoveAll()) {
      // Executors spin and move every link (tryProgress): a pass here would only take the mutex
      // from them, and its wake-up the core (on 2 cores, 8-byte AllReduce over TCP ran 15-20%
      // slower with it). Sleep as sleepUntilRung does while they poll; the last one to leave rings.
      if (sleepUntilRung(/*hot=*/false)) idleSince = 0;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      moved = passAll(&busy);
      links_.erase(std::remove_if(links_.begin(), links_.end(), [](const auto& l) { return l->closed; }), links_.end());
      // Active while messages move or are in flight; Idle when none are, unless asleep already (a
      // sleep that timed out with nothing to do stays a sleep).
      if (moved || busy)
        recordCtrl(ncclProfilerProxyCtrlActive);
      else if (ctrlState_ != ncclProfilerProxyCtrlSleep)
        recordCtrl(ncclProfilerProxyCtrlIdle);
    }
    if (moved) {
      idleSince = 0;
      continue;
    }
    const int64_t now = nowNs();
    if (idleSince == 0) idleSince = now;
    const bool hot = busy || now < hotUntilNs_.load(std::memory_order_relaxed) ||
                     gpuHolders_.load(std::memory_order_relaxed) > 0;
    // GPU kernels publish without ringing: their links are polled even on a ringing network.
    if (allRing_.load(std::memory_order_relaxed) && gpuHolders_.load(std::memory_order_relaxed) == 0) {
      if (sleepUntilRung(hot)) idleSince = 0;
      continue;
    }
    setEventMode(false);
    if (hot && now - idleSince < kSpinNs) {
      sched_yield();
      continue;
    }
    // Sleep on the doorbell: executors ring it when they publish or release a slot. With requests
    // in flight (or an operation just started), only nap: the network's progress is polled.
    uint32_t seen = bell_.doorbell.load(std::memory_order_acquire);
    bell_.sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // A nap between polls is no sleep for the profiler; only the idle sleep is.
    if (hot)
      futexWait(&bell_.doorbell, seen, kNapNs);
    else
      sleepOnBell(seen, kIdleSleepNs);
    bell_.sleeping.store(0, std::memory_order_relaxed);
  }
}

}  // namespace weft::net
