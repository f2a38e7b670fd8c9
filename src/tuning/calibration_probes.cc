#include "tuning/calibration_probes.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace weft {
namespace probes {

double usSince(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

namespace {

// One repeat of a time-boxed probe runs this long; calibration.cc runs several repeats of every
// probe, so the whole measurement stays within a few hundred ms.
constexpr double kBoxUs = 1500;
// The longest a probe that waits for another thread may take; beyond it the repeat is dropped.
constexpr double kDeadlineUs = 5000;

// Runs fn on a thread bound to `cpu` (or unbound when binding fails).
template <typename F>
std::thread threadOn(int cpu, F fn) {
  return std::thread([cpu, fn] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    fn();
  });
}

long futex(std::atomic<int>* addr, int op, int val, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<int*>(addr), op, val, timeout, nullptr, 0);
}

}  // namespace

std::vector<int> allowedCpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// Buffers that stay in cache, as FIFO slots do.
double copyGBps() {
  constexpr size_t kBytes = 256 * 1024;
  std::vector<char> a(kBytes, 1), b(kBytes, 2);
  size_t moved = 0;
  auto t0 = Clock::now();
  while (usSince(t0) < kBoxUs) {
    std::memcpy(b.data(), a.data(), kBytes);
    std::memcpy(a.data(), b.data(), kBytes);
    moved += 2 * kBytes;
  }
  return double(moved) / usSince(t0) / 1e3;
}

double reduceGBps() {
  constexpr size_t kCount = 32 * 1024;
  std::vector<float> a(kCount, 1.0f), b(kCount, 2.0f), out(kCount);
  size_t produced = 0;
  auto t0 = Clock::now();
  while (usSince(t0) < kBoxUs) {
    for (int r = 0; r < 4; ++r) {
      for (size_t i = 0; i < kCount; ++i) out[i] = a[i] + b[i];
      std::swap(out, a);  // a dependency between rounds, so the loop cannot be skipped
    }
    produced += 4 * kCount * sizeof(float);
  }
  volatile float sink = a[kCount / 2];
  (void)sink;
  return double(produced) / usSince(t0) / 1e3;
}

// The slot protocol alone (a 64-byte header written with 48 bytes, as the op stamp and the inline
// payload are, a release store of the flag, an acquire load by the reader), scaled by the
// bookkeeping the executor adds around it
// (chain scan, cursor advance).
double stepUs() {
  constexpr double kExecutorFactor = 6.0;
  alignas(64) struct {
    std::atomic<uint64_t> flag{0};
    uint32_t bytes = 0;
    char inlinePayload[48] = {};
  } slot;
  char src[48] = {1}, dst[48];
  constexpr int kIters = 4000;
  auto t0 = Clock::now();
  for (int i = 1; i <= kIters; ++i) {
    std::memcpy(slot.inlinePayload, src, sizeof(src));
    slot.bytes = sizeof(src);
    slot.flag.store(uint64_t(i), std::memory_order_release);
    if (slot.flag.load(std::memory_order_acquire) == uint64_t(i)) std::memcpy(dst, slot.inlinePayload, slot.bytes);
    src[i % 48] = dst[(i + 1) % 48];
  }
  return usSince(t0) / kIters * kExecutorFactor;
}

// Spins with a pause, yields after a while (the peer may share the core), gives up at the deadline.
double handoffUs() {
  constexpr int kRounds = 300;
  alignas(64) std::atomic<int> ping{0};
  alignas(64) std::atomic<bool> stop{false};
  auto t0 = Clock::now();
  auto wait = [&](int want) {
    for (int spins = 0; ping.load(std::memory_order_acquire) != want; ++spins) {
      if (stop.load(std::memory_order_relaxed)) return false;
      if (spins > 2000) std::this_thread::yield();
      if ((spins & 255) == 0 && usSince(t0) > kDeadlineUs) return false;
    }
    return true;
  };
  std::thread peer([&] {
    for (int i = 0; i < kRounds; ++i) {
      if (!wait(2 * i + 1)) return;
      ping.store(2 * i + 2, std::memory_order_release);
    }
  });
  int done = 0;
  auto start = Clock::now();
  for (; done < kRounds; ++done) {
    ping.store(2 * done + 1, std::memory_order_release);
    if (!wait(2 * done + 2)) break;
  }
  double elapsed = usSince(start);
  stop.store(true);
  peer.join();
  // A repeat cut short by the deadline measured a stall, not a handoff.
  return done == kRounds ? elapsed / done / 2 : -1;
}

// What a rank pays for a peer's answer when ranks outnumber cores. Every sleep is bounded by 1 ms.
double futexWakeUs() {
  constexpr int kRounds = 40;
  alignas(64) std::atomic<int> word{0};
  std::atomic<bool> stop{false};
  const timespec oneMs{0, 1000000};
  auto t0 = Clock::now();
  auto waitFor = [&](int want) {
    int v;
    while ((v = word.load(std::memory_order_acquire)) != want) {
      if (stop.load() || usSince(t0) > kDeadlineUs) return false;
      futex(&word, FUTEX_WAIT_PRIVATE, v, &oneMs);
    }
    return true;
  };
  std::thread peer([&] {
    for (int i = 0; i < kRounds; ++i) {
      if (!waitFor(2 * i + 1)) return;
      word.store(2 * i + 2, std::memory_order_release);
      futex(&word, FUTEX_WAKE_PRIVATE, 1, nullptr);
    }
  });
  int done = 0;
  auto start = Clock::now();
  for (; done < kRounds; ++done) {
    word.store(2 * done + 1, std::memory_order_release);
    futex(&word, FUTEX_WAKE_PRIVATE, 1, nullptr);
    if (!waitFor(2 * done + 2)) break;
  }
  double elapsed = usSince(start);
  stop.store(true);
  word.store(-1);
  futex(&word, FUTEX_WAKE_PRIVATE, 1, nullptr);
  peer.join();
  return done == kRounds ? elapsed / done / 2 : -1;
}

// What a hop costs when ranks outnumber cores (the executor then yields at once).
double yieldHandoffUs() {
  std::vector<int> cpus = allowedCpus();
  if (cpus.empty()) return -1;
  constexpr int kRounds = 300;
  alignas(64) std::atomic<int> ping{0};
  std::atomic<bool> stop{false};
  auto t0 = Clock::now();
  auto wait = [&](int want) {
    while (ping.load(std::memory_order_acquire) != want) {
      if (stop.load(std::memory_order_relaxed) || usSince(t0) > kDeadlineUs) return false;
      sched_yield();
    }
    return true;
  };
  int done = 0;
  double elapsed = 0;
  std::thread a = threadOn(cpus[0], [&] {
    auto start = Clock::now();
    for (; done < kRounds; ++done) {
      ping.store(2 * done + 1, std::memory_order_release);
      if (!wait(2 * done + 2)) break;
    }
    elapsed = usSince(start);
    stop.store(true);
  });
  std::thread b = threadOn(cpus[0], [&] {
    for (int i = 0; i < kRounds; ++i) {
      if (!wait(2 * i + 1)) return;
      ping.store(2 * i + 2, std::memory_order_release);
    }
  });
  a.join();
  b.join();
  return done == kRounds ? elapsed / done / 2 : -1;
}

// 256 KiB written by one core, then read and summed by another (a direct read of a peer's
// staging area).
double peerReadGBps() {
  std::vector<int> cpus = allowedCpus();
  if (cpus.size() < 2) return -1;
  constexpr size_t kCount = 64 * 1024;
  std::vector<float> buf(kCount, 1.0f);
  std::atomic<int> turn{0};
  std::atomic<bool> stop{false};
  double readUs = 0;
  size_t readBytes = 0;
  auto t0 = Clock::now();
  std::thread writer = threadOn(cpus[0], [&] {
    for (int r = 1; !stop.load(); r += 2) {
      while (turn.load(std::memory_order_acquire) != r - 1)
        if (stop.load()) return;
      for (size_t i = 0; i < kCount; ++i) buf[i] = float(r);
      turn.store(r, std::memory_order_release);
    }
  });
  std::thread reader = threadOn(cpus[1], [&] {
    float sink = 0;
    for (int r = 1; usSince(t0) < kBoxUs / 2; r += 2) {
      while (turn.load(std::memory_order_acquire) != r)
        if (usSince(t0) > kDeadlineUs) return;
      auto s = Clock::now();
      // Eight independent sums: one chain of dependent adds would measure the adder's latency,
      // not the reads.
      float part[8] = {};
      for (size_t i = 0; i < kCount; i += 8)
        for (int k = 0; k < 8; ++k) part[k] += buf[i + k];
      for (float p : part) sink += p;
      readUs += usSince(s);
      readBytes += kCount * sizeof(float);
      turn.store(r + 1, std::memory_order_release);
    }
    volatile float keep = sink;
    (void)keep;
  });
  reader.join();
  stop.store(true);
  writer.join();
  return readUs > 0 ? double(readBytes) / readUs / 1e3 : -1;
}

MemCopy::MemCopy() : a_(32u << 20, 1), b_(32u << 20, 2) {}

// One 32 MiB copy per repeat, direction alternating, so each repeat reads what the last wrote.
double MemCopy::gBps() {
  auto t0 = Clock::now();
  std::memcpy(b_.data(), a_.data(), a_.size());
  double us = usSince(t0);
  std::swap(a_, b_);
  return us > 0 ? double(a_.size()) / us / 1e3 : -1;
}

}  // namespace probes
}  // namespace weft
