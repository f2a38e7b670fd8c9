#include "tuning/calibration.h"

#include <linux/futex.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "core/log.h"
#include "core/params.h"

namespace weft {
namespace {

constexpr const char* kCacheHeader = "weft-tuner-calibration 1";
using Clock = std::chrono::steady_clock;

double usSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

std::string cpuModel() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 1);
    }
  return "unknown-cpu";
}

std::string fileSafe(const std::string& s) {
  std::string out;
  for (char c : s) out.push_back(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_');
  return out;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Copy bandwidth of one core over buffers that stay in cache (FIFO slots do), ~8 ms.
double measureCopyGBps() {
  constexpr size_t kBytes = 256 * 1024;
  std::vector<char> a(kBytes, 1), b(kBytes, 2);
  size_t moved = 0;
  auto t0 = Clock::now();
  while (usSince(t0) < 8000) {
    for (int i = 0; i < 8; ++i) {
      std::memcpy(b.data(), a.data(), kBytes);
      std::memcpy(a.data(), b.data(), kBytes);
    }
    moved += 16 * kBytes;
  }
  return double(moved) / usSince(t0) / 1e3;
}

// out = a + b over floats, ~8 ms; bytes of out per second.
double measureReduceGBps() {
  constexpr size_t kCount = 32 * 1024;
  std::vector<float> a(kCount, 1.0f), b(kCount, 2.0f), out(kCount);
  size_t produced = 0;
  auto t0 = Clock::now();
  while (usSince(t0) < 8000) {
    for (int r = 0; r < 8; ++r) {
      for (size_t i = 0; i < kCount; ++i) out[i] = a[i] + b[i];
      std::swap(out, a);  // a dependency between rounds, so the loop cannot be skipped
    }
    produced += 8 * kCount * sizeof(float);
  }
  volatile float sink = a[kCount / 2];
  (void)sink;
  return double(produced) / usSince(t0) / 1e3;
}

// The executor's fixed cost per piece, measured on the slot protocol alone (a 64-byte header
// written with 48 inline bytes, a release store of the flag, an acquire load by the reader), then
// scaled by the bookkeeping the executor adds around it (chain scan, cursor advance).
double measureStepUs() {
  constexpr double kExecutorFactor = 6.0;
  alignas(64) struct {
    std::atomic<uint64_t> flag{0};
    uint32_t bytes = 0;
    char inlinePayload[48] = {};
  } slot;
  char src[48] = {1}, dst[48];
  constexpr int kIters = 20000;
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

// Half a round trip of a cache line between two threads. Spins with a pause, yields after a
// while (the peer may share the core), gives up at the deadline: returns <0 if nothing completed.
double measureHandoffUs() {
  constexpr int kRounds = 2000;
  constexpr double kDeadlineUs = 20000;
  alignas(64) std::atomic<int> ping{0};
  alignas(64) std::atomic<bool> stop{false};
  auto wait = [&](int want, Clock::time_point t0) {
    for (int spins = 0; ping.load(std::memory_order_acquire) != want; ++spins) {
      if (stop.load(std::memory_order_relaxed)) return false;
      if (spins > 2000) std::this_thread::yield();
      if ((spins & 255) == 0 && usSince(t0) > kDeadlineUs) return false;
    }
    return true;
  };
  auto t0 = Clock::now();
  std::thread peer([&] {
    for (int i = 0; i < kRounds; ++i) {
      if (!wait(2 * i + 1, t0)) return;
      ping.store(2 * i + 2, std::memory_order_release);
    }
  });
  int done = 0;
  auto start = Clock::now();
  for (; done < kRounds; ++done) {
    ping.store(2 * done + 1, std::memory_order_release);
    if (!wait(2 * done + 2, t0)) break;
  }
  double elapsed = usSince(start);
  stop.store(true);
  peer.join();
  return done > 0 ? elapsed / done / 2 : -1;
}

long futex(std::atomic<int>* addr, int op, int val, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<int*>(addr), op, val, timeout, nullptr, 0);
}

// Half a round trip of two threads that sleep on futexes and wake each other (what a rank pays
// for a peer's answer when ranks outnumber cores). Every sleep is bounded by 1 ms and the whole
// measurement by 30 ms.
double measureFutexWakeUs() {
  constexpr int kRounds = 200;
  constexpr double kDeadlineUs = 30000;
  alignas(64) std::atomic<int> word{0};
  std::atomic<bool> stop{false};
  const timespec oneMs{0, 1000000};
  auto waitFor = [&](int want, Clock::time_point t0) {
    int v;
    while ((v = word.load(std::memory_order_acquire)) != want) {
      if (stop.load() || usSince(t0) > kDeadlineUs) return false;
      futex(&word, FUTEX_WAIT_PRIVATE, v, &oneMs);
    }
    return true;
  };
  auto t0 = Clock::now();
  std::thread peer([&] {
    for (int i = 0; i < kRounds; ++i) {
      if (!waitFor(2 * i + 1, t0)) return;
      word.store(2 * i + 2, std::memory_order_release);
      futex(&word, FUTEX_WAKE_PRIVATE, 1, nullptr);
    }
  });
  int done = 0;
  auto start = Clock::now();
  for (; done < kRounds; ++done) {
    word.store(2 * done + 1, std::memory_order_release);
    futex(&word, FUTEX_WAKE_PRIVATE, 1, nullptr);
    if (!waitFor(2 * done + 2, t0)) break;
  }
  double elapsed = usSince(start);
  stop.store(true);
  word.store(-1);
  futex(&word, FUTEX_WAKE_PRIVATE, 1, nullptr);
  peer.join();
  return done > 0 ? elapsed / done / 2 : -1;
}

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

// The CPUs this process may run on, in order.
std::vector<int> allowedCpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// Half a round trip between two threads bound to the same CPU that yield to each other: what a
// hop costs when ranks outnumber cores (the executor then yields at once). Bounded by 20 ms.
double measureYieldHandoffUs() {
  std::vector<int> cpus = allowedCpus();
  if (cpus.empty()) return -1;
  constexpr int kRounds = 2000;
  alignas(64) std::atomic<int> ping{0};
  std::atomic<bool> stop{false};
  auto t0 = Clock::now();
  auto wait = [&](int want) {
    while (ping.load(std::memory_order_acquire) != want) {
      if (stop.load(std::memory_order_relaxed) || usSince(t0) > 20000) return false;
      sched_yield();
    }
    return true;
  };
  std::atomic<int> done{0};
  std::atomic<double> elapsed{0};
  std::thread a = threadOn(cpus[0], [&] {
    auto start = Clock::now();
    int i = 0;
    for (; i < kRounds; ++i) {
      ping.store(2 * i + 1, std::memory_order_release);
      if (!wait(2 * i + 2)) break;
    }
    elapsed.store(usSince(start));
    done.store(i);
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
  return done.load() > 0 ? elapsed.load() / done.load() / 2 : -1;
}

// memcpy bandwidth of one core over 32 MiB buffers (beyond most caches), ~10-20 ms.
double measureMemGBps() {
  constexpr size_t kBytes = 32u << 20;
  std::vector<char> a(kBytes, 1), b(kBytes, 2);
  auto t0 = Clock::now();
  std::memcpy(b.data(), a.data(), kBytes);
  std::memcpy(a.data(), b.data(), kBytes);
  return 2.0 * kBytes / usSince(t0) / 1e3;
}

// One core reading 256 KiB that another core has just written (a direct read of a peer's staging
// area), summing it so the reads cannot be skipped. ~5 ms.
double measurePeerReadGBps() {
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
    for (int r = 1; usSince(t0) < 5000; r += 2) {
      while (turn.load(std::memory_order_acquire) != r)
        if (usSince(t0) > 20000) return;
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

bool sameName(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::mutex gMutex;
bool gReady = false;
HostConstants gConstants;
std::string gSource;

}  // namespace

HostConstants measureHostConstants() {
  HostConstants hc;
  auto t0 = Clock::now();
  hc.copyGBps = measureCopyGBps();
  hc.reduceGBps = measureReduceGBps();
  hc.stepUs = measureStepUs();
  double h = measureHandoffUs();
  if (h > 0) hc.handoffUs = h;
  double f = measureFutexWakeUs();
  if (f > 0) hc.futexWakeUs = f;
  double y = measureYieldHandoffUs();
  if (y > 0) hc.yieldHandoffUs = y;
  double m = measureMemGBps();
  if (m > 0) hc.memGBps = m;
  double pr = measurePeerReadGBps();
  if (pr > 0) hc.peerReadGBps = pr;
  // Virtual machines often report the whole host's last-level cache: trust at most 32 MiB of it.
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) hc.cacheMiB = std::min(32.0, double(l3) / 1048576.0);
  WEFT_INFO(kLogTuning, "tuner calibration took %.1f ms: %s", usSince(t0) / 1e3, formatHostConstants(hc).c_str());
  return hc;
}

std::string calibrationCachePath() {
  std::string dir = param::cacheDir();
  if (dir.empty()) {
    passwd pw, *found = nullptr;
    char buf[4096];
    if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &found) != 0 || found == nullptr || pw.pw_dir == nullptr)
      return "";
    dir = std::string(pw.pw_dir) + "/.cache";
  }
  char host[256] = "unknown-host";
  gethostname(host, sizeof(host) - 1);
  char key[32];
  std::snprintf(key, sizeof(key), "%016llx", static_cast<unsigned long long>(fnv1a(cpuModel())));
  // The v2 in the name: a file written before the model had all of today's constants is not reused.
  return dir + "/weft/calibration-v2-" + fileSafe(host) + "-" + key + ".txt";
}

bool saveHostConstants(const std::string& path, const HostConstants& hc, std::string* why) {
  // Create the directories along the way; an existing one is fine.
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1))
    mkdir(path.substr(0, slash).c_str(), 0755);
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(tmp);
    if (!f) {
      *why = "cannot write " + tmp + ": " + std::strerror(errno);
      return false;
    }
    f << kCacheHeader << "\ncpu " << trimmed(cpuModel()) << "\n";
    char line[128];
    for (int i = 0; i < kNumConstantFields; ++i) {
      std::snprintf(line, sizeof(line), "%s %.9g\n", kConstantFields[i].name, hc.*kConstantFields[i].field);
      f << line;
    }
    if (!f.good()) {
      *why = "write to " + tmp + " failed";
      return false;
    }
  }
  // Rename, so a process reading the cache never sees half a file.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *why = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool loadHostConstants(const std::string& path, HostConstants* hc) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line) || line != kCacheHeader) return false;
  HostConstants out;
  int found = 0;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    std::string name;
    double v;
    if (!(ss >> name) || name == "cpu") continue;
    if (!(ss >> v) || !std::isfinite(v) || v <= 0) return false;
    for (int i = 0; i < kNumConstantFields; ++i)
      if (name == kConstantFields[i].name) {
        out.*kConstantFields[i].field = v;
        ++found;
      }
  }
  if (found != kNumConstantFields) return false;
  *hc = out;
  return true;
}

void applyConstantOverrides(const std::string& text, HostConstants* hc, std::string* bad) {
  std::stringstream ss(text);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    tok = trimmed(tok);
    if (tok.empty()) continue;
    size_t eq = tok.find('=');
    bool ok = false;
    if (eq != std::string::npos) {
      std::string name = trimmed(tok.substr(0, eq)), value = trimmed(tok.substr(eq + 1));
      char* end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (!value.empty() && end && *end == '\0' && std::isfinite(v) && v > 0)
        for (int i = 0; i < kNumConstantFields; ++i)
          if (sameName(name, kConstantFields[i].name)) {
            hc->*kConstantFields[i].field = v;
            ok = true;
          }
    }
    if (!ok) *bad += (bad->empty() ? "\"" : ", \"") + tok + "\"";
  }
}

std::string formatHostConstants(const HostConstants& hc) {
  std::string out;
  char buf[64];
  for (int i = 0; i < kNumConstantFields; ++i) {
    std::snprintf(buf, sizeof(buf), "%s%s=%.4g", i ? " " : "", kConstantFields[i].name, hc.*kConstantFields[i].field);
    out += buf;
  }
  return out;
}

const HostConstants& hostConstants() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gReady) return gConstants;
  const std::string mode = param::tunerCalibrate();
  HostConstants hc;
  std::string source = "defaults";
  if (mode != "off") {
    std::string path = calibrationCachePath();
    if (mode == "auto" && !path.empty() && loadHostConstants(path, &hc)) {
      source = "cache " + path;
    } else {
      hc = measureHostConstants();
      source = "measured";
      std::string why;
      if (path.empty())
        WEFT_INFO(kLogTuning, "tuner calibration not cached: neither WEFT_CACHE_DIR, XDG_CACHE_HOME nor a home directory is known");
      else if (!saveHostConstants(path, hc, &why))
        WEFT_INFO(kLogTuning, "tuner calibration not cached: %s", why.c_str());
      else
        source += ", saved to " + path;
    }
  }
  gConstants = hc;
  gSource = source;
  gReady = true;
  WEFT_INFO(kLogTuning, "tuner constants (%s): %s", source.c_str(), formatHostConstants(hc).c_str());
  return gConstants;
}

std::string hostConstantsSource() {
  hostConstants();
  std::lock_guard<std::mutex> lock(gMutex);
  return gSource;
}

void calibrationResetForTesting() {
  std::lock_guard<std::mutex> lock(gMutex);
  gReady = false;
}

}  // namespace weft
