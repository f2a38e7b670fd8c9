#include "host_executor/host_executor.h"

#include <sched.h>

#include <algorithm>
#include <memory>

#include "base/clock.h"
#include "base/params.h"
#include "comm/comm.h"
#include "host_executor/connection_fabric.h"
#include "host_executor/spin_budget.h"
#include "host_executor/stamp_exchange.h"
#include "host_executor/step_trace.h"
#include "host_executor/wait_report.h"
#include "trace/trace.h"
#include "transports/futex.h"
#include "transports/net/proxy.h"

namespace weft {
namespace {

// A sched_yield that returns later than this gave the core to another runnable thread.
constexpr int64_t kLostSliceNs = 50000;
// How long a cursor waits idle before the slow-path stamp exchange starts (and its pace): long
// enough that a matched but slow peer costs nothing, short enough to fail well within a second.
constexpr int64_t kStampExchangeNs = 50 * 1000000;
// How often (in executor runs of one thread) a rank looks whether its stamp notes are due to be
// drained: often enough that a busy rank's backlog stays small (at most this many notes per peer).
constexpr uint32_t kDrainCheckRuns = 16;

// Idle periods shorter than this leave no "wait" event in a trace.
constexpr int64_t kTraceWaitNs = 10000;

// The wait point of a traced idle period (the first unfinished chain's), kept until it ends.
struct TracedWait {
  bool noted = false;
  int traceRank = -1;
  WaitPoint where;
  void note(const HostRunner& run) {
    for (const HostRunner::Cur& c : run.cursors()) {
      if (c.finished) continue;
      std::vector<int> peers;
      std::string what;
      where = run.waitOf(c, &peers, &what);
      traceRank = run.taskOf(c).comm->traceRank;
      noted = true;
      return;
    }
  }
  void record(int64_t startNs, int64_t endNs) {
    traceWait(traceRank, where, startNs, endNs);
    noted = false;
  }
};

// One per thread, kept between calls so that steady-state calls allocate nothing.
class Executor {
 public:
  ncclResult_t run(const Program& prog, std::span<const Task> tasks);

 private:
  void drainStampNotesSometimes(bool checkAny);

  ConnectionFabric fabric_;
  HostRunner runner_{fabric_};
  SpinBudget spin_;
  StampExchange exchange_;            // the slow path of mismatch detection (stamp_exchange.h)
  uint32_t runsSinceDrainCheck_ = 0;  // this thread's runs since it last looked at the clock for it
};

// Every kDrainCheckRuns runs only: a clock read per run would cost small operations several
// percent (stamp_exchange.h: drainStampNotesIfDue).
void Executor::drainStampNotesSometimes(bool checkAny) {
  if (!checkAny || ++runsSinceDrainCheck_ < kDrainCheckRuns) return;
  runsSinceDrainCheck_ = 0;
  const int64_t now = nowNs();
  for (ncclComm* comm : runner_.comms())
    if (comm->agreed.mismatchCheck) drainStampNotesIfDue(comm, now);
}

ncclResult_t Executor::run(const Program& prog, std::span<const Task> tasks) {
  runner_.start(prog, tasks);
  const std::vector<ncclComm*>& comms = runner_.comms();
  // The waiting limits are read when the first idle period starts: an operation that never waits
  // (a small one whose peers are ahead) skips three parameter lookups, a few percent of its time.
  int64_t spinNs = 0, timeoutNs = 0, livenessNs = 0, exchangeNs = 0;
  bool limitsRead = false;
  auto readLimits = [&] {
    spinNs = param::spinUs() * 1000;
    timeoutNs = param::timeoutMs() * 1000000;
    livenessNs = std::max<int64_t>(1, param::livenessMs()) * 1000000;
    // The stamp exchange starts this soon into a wait and repeats at this pace while it lasts.
    exchangeNs = std::min<int64_t>(livenessNs, kStampExchangeNs);
    limitsRead = true;
  };
  // More ranks than cores on this machine: spinning would only steal the core a peer needs.
  bool oversubscribed = false;
  for (ncclComm* comm : comms) oversubscribed |= comm->coresOversubscribed;
  RankBlock* bell = comms.empty() ? nullptr : comms[0]->peers.self();
  net::Proxy* proxy = nullptr;
  for (ncclComm* comm : comms)
    if (comm->network != nullptr) {
      proxy = &net::Proxy::instance();
      proxy->kick();
      break;
    }
  // Waits on local peers only, with a core of its own: the spin adapts (SpinBudget) and gives way
  // to a peer queued on this CPU. A rank that waits on the network keeps its full spin: it polls
  // the network itself while spinning, and when it sleeps the proxy has to wake it, which costs a
  // futex wake (14 us here) per message (under two busy loops, adapting took a 64 KiB AllReduce
  // over TCP from 0.25 to 0.9 ms).
  const bool adaptive = !oversubscribed && proxy == nullptr;
  // While this thread spins it moves the network itself (tryProgress below), so the proxy may
  // sleep; while it sleeps, the proxy has the network wake it (see proxy.cc).
  struct Polling {
    net::Proxy* proxy;
    bool on = false;
    void set(bool v, bool operationDone = false) {
      if (proxy == nullptr || v == on) return;
      on = v;
      if (v)
        proxy->addPoller();
      else
        proxy->removePoller(operationDone);
    }
    ~Polling() { set(false, /*operationDone=*/true); }
  } polling{proxy};
  polling.set(true);

  bool checkAny = false;
  for (ncclComm* comm : comms) checkAny |= comm->agreed.mismatchCheck;
  drainStampNotesSometimes(checkAny);
  exchange_.reset();
  int64_t idleSince = 0, lastCheck = 0, lastExchange = 0, spinForNs = 0;
  unsigned spins = 0;
  bool spunOut = false;      // this idle period outlasted its spin
  bool cpuLooked = false;    // this idle period looked for a local peer queued on this CPU
  bool yieldToPeer = false;  // it found one
  bool waitsShown = false;   // publishWaits ran in this idle period
  // Traced runs: where this idle period waits, noted once it has lasted kTraceWaitNs (shorter
  // waits are the normal rhythm of a pipeline, and noting each would swamp the trace).
  TracedWait traced;
  // Tells the spin budget how the idle period that just ended went. A wait cut short by a lost
  // yield says nothing about spinning; it leaves the budget alone.
  auto noteWaitEnded = [&] {
    if (idleSince != 0 && adaptive && spinForNs != 0) spin_.waitEnded(spunOut, spinNs);
  };
  auto resume = [&] {
    if (traced.noted) traced.record(idleSince, nowNs());
    noteWaitEnded();
    spunOut = cpuLooked = yieldToPeer = false;
    idleSince = 0;
    spins = 0;
    if (waitsShown) clearWaits(runner_);
    waitsShown = false;
  };
  while (runner_.error() == ncclSuccess) {
    runner_.resetSetupPending();
    bool moved = runner_.pass();
    if (runner_.finished() || runner_.error() != ncclSuccess) break;
    // Waiting on the network: move its messages from this thread rather than wait for the proxy.
    if (!moved && proxy != nullptr) moved = proxy->tryProgress();
    if (moved) {
      resume();
      continue;
    }
    // The first idle passes only pause once between looks: a peer on another core answers within
    // a cache-line transfer, and a pause costs tens of cycles (more on some CPUs), so looking again
    // soon is what keeps small-message latency low. The clock is read every 16 passes only.
    if (!oversubscribed && idleSince != 0 && (++spins & 15) != 0) {
      cpuRelax();
      continue;
    }
    int64_t now = nowNs();
    if (idleSince == 0) {
      idleSince = lastCheck = now;
      if (!limitsRead) readLimits();
      spinForNs = adaptive ? spin_.ns(spinNs) : spinNs;
    }
    if (!traced.noted && now - idleSince >= kTraceWaitNs && trace::on()) traced.note(runner_);
    // A wait that outlasts the first looks: is a local peer queued on this CPU? Spinning would
    // keep it from running, so yield to it instead. Unbound ranks beside busy loops land on one CPU
    // in about half the runs (the scheduler balances the count of runnable threads, whichever they
    // are); there a 2-rank 8 B AllReduce took 15-25 us a call while the ranks spun and then slept
    // on the futex (a wake costs 14 us here), and 9.5 us when they yield to each other.
    if (!cpuLooked && now != idleSince && adaptive) {
      cpuLooked = true;
      for (ncclComm* comm : comms)
        if (comm->peers.peerNeedsMyCpu()) {
          yieldToPeer = true;
          break;
        }
    }
    if (now - idleSince < spinForNs) {
      // Spin, so that a peer running on another core is caught within a cache-line transfer. A
      // rank with a core of its own yields only to a peer queued on its CPU: with nothing else
      // runnable a yield does nothing, and with compute threads or another job on the core it
      // hands them a whole time slice while the peer's data may already be there (8 B over TCP
      // beside two busy loops: 0.2-0.8 ms with yields, 13 us without). A yield that came back late
      // did just that, so this wait sleeps instead: a woken thread runs promptly. With more ranks
      // than cores the yields are what lets the peers run.
      if (oversubscribed) {
        sched_yield();
      } else if (yieldToPeer) {
        sched_yield();
        if (nowNs() - now > kLostSliceNs) spinForNs = 0;
      }
      continue;
    }
    spunOut = true;
    if (now - lastCheck >= livenessNs || now - idleSince >= timeoutNs) {
      lastCheck = now;
      if (checkHealth(runner_, exchange_, now - idleSince >= timeoutNs, now - idleSince) != ncclSuccess) break;
    }
    if (checkAny && now - idleSince >= exchangeNs && now - lastExchange >= exchangeNs) {
      lastExchange = now;
      if (exchangeStamps(runner_, exchange_) != ncclSuccess) break;
    }
    // About to sleep: say where each communicator waits, once per idle period, so that
    // weftCommDumpState can tell. A wait that ends while spinning or yielding publishes nothing:
    // the latency path (oversubscribed ranks yield within microseconds) pays nothing for it.
    if (!waitsShown) {
      publishWaits(runner_, idleSince);
      waitsShown = true;
    }
    // Sleep until a peer rings. Announce the sleep, then look once more, so a peer that published
    // just before it saw the flag is not missed (see ringIfSleeping).
    uint32_t seen = bell->doorbell.load(std::memory_order_acquire);
    for (ncclComm* comm : comms) comm->peers.self()->sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    polling.set(false);
    if (!runner_.pass() && runner_.error() == ncclSuccess) {
      // One thread driving several communicators hears only the first one's doorbell: cap the
      // sleep so the others are polled often.
      int64_t cap = comms.size() > 1 || runner_.setupPending() ? 1000000 : livenessNs;
      // Stamps and reports arrive over the bootstrap, which rings no doorbell: poll for them.
      if (checkAny) cap = std::min(cap, exchangeNs);
      int64_t left = timeoutNs - (nowNs() - idleSince);
      futexWait(&bell->doorbell, seen, std::max<int64_t>(1000, std::min(cap, left)));
    } else {
      resume();
    }
    for (ncclComm* comm : comms) comm->peers.self()->sleeping.store(0, std::memory_order_relaxed);
    polling.set(true);
  }
  if (waitsShown) clearWaits(runner_);
  if (traced.noted) traced.record(idleSince, nowNs());
  if (runner_.error() == ncclSuccess) noteWaitEnded();
  if (runner_.error() != ncclSuccess) {
    preferReportedMismatch(runner_, exchange_);
    finishFailedRun(runner_);
  }
  return runner_.error();
}

}  // namespace

ncclResult_t executeOnHost(const Program& prog, std::span<const Task> tasks) {
  if (prog.sequences.empty()) return ncclSuccess;
  // On the heap, reached through one thread-local pointer: with the thread-local object itself as
  // `this`, the compiler specialised run() for it and looked its address up again (a call into the
  // dynamic linker's TLS code) on 34 reads in the polling loop.
  thread_local std::unique_ptr<Executor> executor;
  if (executor == nullptr) executor = std::make_unique<Executor>();
  return executor->run(prog, tasks);
}

}  // namespace weft
