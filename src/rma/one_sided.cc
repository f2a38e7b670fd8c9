#include "rma/one_sided.h"

#include <sched.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/clock.h"
#include "base/params.h"
#include "base/result.h"
#include "comm/comm.h"
#include "rma/net_puts.h"
#include "transports/futex.h"
#include "transports/rank_block.h"

namespace weft {
namespace {

constexpr int kSpins = 2000;                        // polls before the first yield: a signal already on its way
constexpr int64_t kYieldNs = 50 * 1000;             // then yields, before sleeping on the doorbell
constexpr int64_t kSleepCapNs = 100 * 1000 * 1000;  // a sleep's bound: liveness is checked in between

std::string rankName(int rank) { return "rank " + std::to_string(rank); }

// Cross-memory attach into another process of this host, in as many calls as the kernel needs.
ncclResult_t writeOtherProcess(const ncclComm* comm, int peer, uint64_t dst, const char* src, size_t bytes,
                               std::string* why) {
  const pid_t pid = comm->peers.block(peer)->pid;
  while (bytes > 0) {
    iovec local{const_cast<char*>(src), bytes};
    iovec remote{reinterpret_cast<void*>(dst), bytes};
    const ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
    if (n > 0) {
      src += n;
      dst += static_cast<uint64_t>(n);
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int e = n < 0 ? errno : EIO;
    *why = rankName(comm->rank) + " cannot write into " + rankName(peer) + "'s window (pid " + std::to_string(pid) +
           ") with process_vm_writev: " + strerror(e);
    if (e == EPERM || e == ENOSYS) {
      *why +=
          "; puts between processes need cross-memory attach, which this host forbids (the ranks must run as one "
          "user, with kernel.yama.ptrace_scope 0 or a container that allows process_vm_writev)";
      return ncclSystemError;
    }
    if (e == ESRCH) return ncclRemoteError;
    if (e == EFAULT) *why += " (localbuff is not readable, or the peer's window is no longer mapped)";
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// A put that arrived over the network but could not be written (comm/window_table.h) fails the
// wait that would have consumed its signal: the program deregistered or mismatched its windows.
ncclResult_t takeDropped(ncclComm* comm, std::string* why) {
  std::lock_guard<std::mutex> lock(comm->windows->mutex);
  if (comm->windows->dropped.empty()) return ncclSuccess;
  *why = comm->windows->dropped;
  comm->windows->dropped.clear();
  return ncclInvalidUsage;
}

}  // namespace

std::string crossMemoryAttachProbe() {
  static volatile uint64_t word = 0x5745465443414d41ull;  // what the child reads
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) return std::string("unknown (cannot fork to probe: ") + strerror(errno) + ")";
  if (child == 0) {
    uint64_t got = 0;
    iovec local{&got, sizeof got};
    iovec remote{const_cast<uint64_t*>(&word), sizeof word};
    const ssize_t n = process_vm_readv(parent, &local, 1, &remote, 1, 0);
    _exit(n == static_cast<ssize_t>(sizeof got) && got == word ? 0 : (n < 0 ? (errno & 0x7f) : 0x7f));
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status)) return "unknown (the probe did not finish)";
  const int code = WEXITSTATUS(status);
  if (code == 0) return "allowed";
  return std::string("refused (") + (code == 0x7f ? "short read" : strerror(code)) +
         "): one-sided puts between rank processes fail with ncclSystemError; threads of one process still work";
}

ncclResult_t putToWindow(ncclComm* comm, int peer, const ncclWindow_vidmem& win, size_t offset, const void* src,
                         size_t bytes, bool signal, std::string* why) {
  if (putsOverNetwork(comm, peer)) return netPut(comm, peer, win.id, offset, src, bytes, signal, why);
  if (bytes > 0) {
    const uint64_t dst = win.spans[peer].addr + offset;
    // Threads of one process (this rank included) share the address space.
    if (peer == comm->rank || comm->peers.samePid(peer)) {
      memmove(reinterpret_cast<void*>(dst), src, bytes);
    } else if (size_t(peer) < win.mapped.size() && win.mapped[peer] != nullptr) {
      // The peer's buffer is ncclMemAlloc memory this process mapped at registration (rma/window.h):
      // a plain copy, and no cross-memory attach, which a ptrace policy may forbid.
      memmove(const_cast<unsigned char*>(win.mapped[peer]) + offset, src, bytes);
    } else {
      WEFT_CHECK(writeOtherProcess(comm, peer, dst, static_cast<const char*>(src), bytes, why));
    }
  }
  return signal ? signalPeer(comm, peer, why) : ncclSuccess;
}

ncclResult_t signalPeer(ncclComm* comm, int peer, std::string* why) {
  if (putsOverNetwork(comm, peer)) return netPut(comm, peer, 0, 0, nullptr, 0, true, why);
  RankBlock* block = comm->peers.block(peer);
  if (comm->peers.samePid(peer)) block = reinterpret_cast<RankBlock*>(block->ownerAddress);
  // Release: the put's bytes, written before, are visible to a waiter that reads the new count.
  rankSignals(block)[comm->rank].fetch_add(1, std::memory_order_release);
  ringIfSleeping(block);
  return ncclSuccess;
}

ncclResult_t waitSignals(ncclComm* comm, const std::vector<SignalWait>& waits, std::string* why) {
  RankBlock* self = comm->peers.self();
  SignalCounter* counters = rankSignals(self);
  auto firstShort = [&]() -> const SignalWait* {
    for (const SignalWait& w : waits)
      if (counters[w.peer].load(std::memory_order_acquire) < w.total) return &w;
    return nullptr;
  };
  NetworkPoller network(
      std::any_of(waits.begin(), waits.end(), [&](const SignalWait& w) { return putsOverNetwork(comm, w.peer); }));
  const int64_t start = nowNs();
  const int64_t timeoutNs = param::timeoutMs() * 1000000;
  const int64_t livenessNs = param::livenessMs() * 1000000;
  int64_t lastCheck = start;
  for (int spin = 0;; ++spin) {
    const SignalWait* w = firstShort();
    if (w == nullptr) return takeDropped(comm, why);
    // Puts over the network land on the proxy's thread; moving the network from here saves the
    // wait a thread switch.
    if (network.progress()) continue;
    if (spin < kSpins) {
      cpuRelax();
      continue;
    }
    const int64_t now = nowNs();
    auto where = [&] {
      const uint64_t seen = counters[w->peer].load(std::memory_order_acquire);
      const uint64_t before = comm->signalsWaited[w->peer];
      return rankName(comm->rank) + " is waiting in ncclWaitSignal for signals from " + rankName(w->peer) + ": " +
             std::to_string(seen - std::min(seen, before)) + " of " + std::to_string(w->total - before) + " arrived";
    };
    if (comm->abortFlag.load(std::memory_order_acquire)) {
      *why = where() + "; the communicator was aborted (ncclCommAbort)";
      return ncclInvalidUsage;
    }
    if (now - lastCheck >= livenessNs) {
      lastCheck = now;
      std::string failure = comm->peers.peerFailure(w->peer);
      if (failure.empty() && putsOverNetwork(comm, w->peer)) failure = netPutLinkFailure(comm, w->peer);
      if (!failure.empty()) {
        *why = failure + " while " + where();
        return ncclRemoteError;
      }
    }
    if (now - start >= timeoutNs) {
      *why = where() + "; none more for " + std::to_string((now - start) / 1000000) +
             " ms (WEFT_TIMEOUT_MS=" + std::to_string(param::timeoutMs()) + ")";
      return ncclRemoteError;
    }
    if (now - start < kYieldNs) {
      sched_yield();
      continue;
    }
    // Announce the sleep, then look once more: a peer that signalled before it saw the flag is seen
    // here, one that signals after it rings (ringIfSleeping).
    const uint32_t seen = self->doorbell.load(std::memory_order_acquire);
    self->sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    network.beforeSleep();
    if (firstShort() != nullptr)
      futexWait(&self->doorbell, seen,
                std::min({kSleepCapNs, livenessNs, std::max<int64_t>(1000, timeoutNs - (now - start))}));
    self->sleeping.store(0, std::memory_order_relaxed);
    network.afterSleep();
  }
}

}  // namespace weft
