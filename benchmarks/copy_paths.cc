// copy_paths: what each way of moving S bytes from one process to another gives on this host, in GB/s.
// Weft's shared-memory transport moves a message with two pipelined copies (sender into a shared FIFO, receiver out
// of it); cross-memory attach (process_vm_readv/writev) would move it with one. Whether the single copy wins depends
// on the machine: the kernel pins the peer's pages on every call, and on a VM that can make CMA slower than memcpy,
// even slower than the two-copy FIFO. So this measures memcpy (the bound), CMA reads at several call sizes, a CMA
// write and the two-copy FIFO, with warm buffers and cold ones (rotating through pools larger than the caches),
// interleaved, and reports medians. It does not link Weft; Linux only. `copy_paths --help` for the options.
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kKiB = 1024, kMiB = 1024 * kKiB, kGiB = 1024 * kMiB;
constexpr uint64_t kDriverSourceTag = 1, kPeerSourceTag = 2;  // each source buffer carries its own pattern

struct Options {
  size_t bytes = 32 * kMiB, reps = 5, slotBytes = 64 * kKiB, slots = 8, poolBytes = 512 * kMiB;
  std::vector<size_t> chunks{64 * kKiB, 256 * kKiB, kMiB, 4 * kMiB};
};

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "copy_paths: %s\n", message.c_str());
  std::exit(1);
}

std::string sizeText(size_t bytes) {
  for (auto [unit, suffix] : {std::pair{kGiB, "G"}, std::pair{kMiB, "M"}, std::pair{kKiB, "K"}})
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  return std::to_string(bytes);
}

bool parseSize(const std::string& text, size_t& out) {  // a number, then K, M or G (powers of 1024)
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  const size_t suffix = std::string(" KMG kmg").find(*end == '\0' ? ' ' : *end);
  out = static_cast<size_t>(value) << (10 * (suffix % 4));
  return end != text.c_str() && value != 0 && suffix != std::string::npos && (*end == '\0' || end[1] == '\0');
}

// The pattern is a function of (buffer seed, word index), so either process can check bytes the other one wrote.
uint64_t patternWord(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fillPattern(uint8_t* buffer, size_t bytes, uint64_t seed) {
  uint64_t word = 0;
  for (size_t i = 0; 8 * i < bytes; ++i)
    word = patternWord(seed, i), std::memcpy(buffer + 8 * i, &word, std::min<size_t>(8, bytes - 8 * i));
}

// Checks 8 bytes at each of at least 64 places (about one per 64 KiB, the first and the last byte among them)
// against the pattern. With `poison` it writes their complement first, so that a case which delivered nothing cannot
// pass on bytes an earlier case left in the same destination.
bool checkOrPoison(uint8_t* buffer, size_t bytes, uint64_t seed, bool poison) {
  bool ok = true;
  const size_t samples = std::clamp<size_t>(bytes / (64 * kKiB), 64, 4096);
  for (size_t s = 0; s < samples; ++s) {
    const size_t offset = s * (bytes - 1) / (samples - 1);
    for (size_t at = offset; at < std::min(offset + 8, bytes); ++at) {
      const uint64_t word = patternWord(seed, at / 8);  // as fillPattern stored it
      const uint8_t expected = reinterpret_cast<const uint8_t*>(&word)[at % 8];
      if (poison) buffer[at] = static_cast<uint8_t>(~expected);
      ok = ok && buffer[at] == expected;
    }
  }
  return ok;
}

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until `word` holds `want`. Pause first (the other side is usually well under a microsecond away), then
// yield: with fewer cores than busy processes the other side may need this core to make progress.
void waitFor(const std::atomic<uint64_t>& word, uint64_t want) {
  Clock::time_point since{};
  for (uint64_t spins = 1; word.load(std::memory_order_acquire) != want; ++spins) {
    spins < 4096 ? cpuRelax() : static_cast<void>(sched_yield());
    if (spins % 65536 != 0) continue;
    if (since == Clock::time_point{}) since = Clock::now();
    if (Clock::now() - since > std::chrono::seconds(20)) fail("the peer process stopped answering");
  }
}

struct alignas(64) Flag {
  std::atomic<uint64_t> value{0};
};

// All in one MAP_SHARED mapping made before fork(): the start flags, one sequence word per slot, the slots.
struct Ring {
  Flag *ready, *go, *seq;
  uint8_t* data;
  size_t slotBytes, slots;
};

// The pipelined two-copy path. Chunk c travels in slot c % slots; the slot's sequence word is 2 * lap while the
// slot is free for lap c / slots and 2 * lap + 1 once full, so each side needs only the slot's own word.
void fifoMove(const Ring& ring, uint8_t* local, size_t bytes, bool sending) {
  for (size_t chunk = 0, offset = 0; offset < bytes; ++chunk, offset += ring.slotBytes) {
    const size_t slot = chunk % ring.slots, length = std::min(ring.slotBytes, bytes - offset);
    const uint64_t full = 2 * (chunk / ring.slots) + 1;
    uint8_t* data = ring.data + slot * ring.slotBytes;
    waitFor(ring.seq[slot].value, sending ? full - 1 : full);
    std::memcpy(sending ? data : local + offset, sending ? local + offset : data, length);
    ring.seq[slot].value.store(sending ? full : full + 1, std::memory_order_release);
  }
}

// Moves `bytes` between `local` and the peer's `remote` in calls of `chunk` bytes; returns 0 or the errno.
int cmaMove(bool write, pid_t peer, uint8_t* local, uintptr_t remote, size_t bytes, size_t chunk) {
  for (size_t done = 0; done < bytes;) {
    const size_t length = std::min(chunk, bytes - done);
    iovec localIov{local + done, length}, remoteIov{reinterpret_cast<void*>(remote + done), length};
    const ssize_t moved = write ? process_vm_writev(peer, &localIov, 1, &remoteIov, 1, 0)
                                : process_vm_readv(peer, &localIov, 1, &remoteIov, 1, 0);
    if (moved < 0 && errno == EINTR) continue;
    if (moved <= 0) return moved < 0 ? errno : EIO;
    done += static_cast<size_t>(moved);
  }
  return 0;
}

struct Pool {  // buffer 0 is the warm one, 1..count-1 rotate for the cold runs
  uint8_t* base = nullptr;
  size_t stride = 0;
  uint8_t* at(size_t index) const { return base + index * stride; }
};

Pool mapPool(size_t count, size_t stride, uint64_t patternTag, size_t bytes) {
  void* memory = mmap(nullptr, count * stride, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) fail("mmap of " + sizeText(count * stride) + ": " + std::strerror(errno));
  Pool pool{static_cast<uint8_t*>(memory), stride};
  // Touch every page now, so that no measurement pays the first faults (and CMA finds the peer's pages present).
  if (patternTag == 0) std::memset(pool.base, 0xA5, count * stride);
  for (size_t i = 0; patternTag != 0 && i < count; ++i) fillPattern(pool.at(i), bytes, patternTag << 32 | i);
  return pool;
}

bool pipeAll(bool writing, int fd, void* data, size_t size) {  // false: the other end is gone
  for (size_t done = 0; done < size;) {
    char* at = static_cast<char*>(data) + done;
    const ssize_t n = writing ? write(fd, at, size - done) : read(fd, at, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

enum class Order : uint64_t { kFifoSend, kPoison, kCheck, kExit };
struct Command {
  Order order;
  uint64_t index = 0, seed = 0, epoch = 0;
};

// The peer: holds a source pool (read by CMA, sent through the FIFO) and a destination pool (written by CMA), both
// filled before it reports its addresses, and then sleeps in read() between orders, so it costs no CPU while the
// driver times memcpy and CMA.
int runPeer(const Options& options, size_t count, size_t stride, const Ring& ring, int commandFd, int replyFd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const Pool source = mapPool(count, stride, kPeerSourceTag, options.bytes), dest = mapPool(count, stride, 0, 0);
  uint64_t bases[2] = {reinterpret_cast<uintptr_t>(source.base), reinterpret_cast<uintptr_t>(dest.base)};
  if (!pipeAll(true, replyFd, bases, sizeof bases)) return 1;
  for (Command command; pipeAll(false, commandFd, &command, sizeof command);) {
    uint64_t reply = 1;
    if (command.order == Order::kExit) return 0;
    if (command.order == Order::kFifoSend) {
      ring.ready->value.store(command.epoch, std::memory_order_release);
      waitFor(ring.go->value, command.epoch);
      fifoMove(ring, source.at(command.index), options.bytes, true);
    } else {
      reply = checkOrPoison(dest.at(command.index), options.bytes, command.seed, command.order == Order::kPoison);
    }
    if (!pipeAll(true, replyFd, &reply, sizeof reply)) return 1;
  }
  return 1;  // the driver went away
}

enum class Kind { kMemcpy, kCmaRead, kCmaWrite, kFifo };
struct Case {
  Kind kind;
  bool cold;
  size_t chunk;
  std::string chunkLabel;
  std::vector<double> gbps;
};
const char* const kKindNames[] = {"memcpy", "cma-read", "cma-write", "fifo 2-copy"};
const char* kindName(Kind kind) { return kKindNames[static_cast<int>(kind)]; }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

const char* kHelp =
    "usage: copy_paths [options]   moving bytes between two processes: memcpy, CMA, a two-copy shared FIFO\n"
    "  --bytes S      message size, K/M/G = powers of 1024 (default 32M)\n"
    "  --reps N       repetitions; each runs every case once, in an order that rotates (default 5)\n"
    "  --chunks LIST  process_vm_readv call sizes, comma-separated (default 64K,256K,1M,4M)\n"
    "  --slot B       FIFO slot size (default 64K)\n"
    "  --slots N      FIFO slots in the ring (default 8)\n"
    "  --pool B       cold mode rotates through buffers totalling at least B per side (default 512M;\n"
    "                 made smaller when memory is short)\n"
    "Rows: GB/s (1e9 bytes/s) delivered into the destination, the median over the repetitions, and its ratio to\n"
    "the median memcpy of the same mode. warm: the same buffers every time; cold: rotating through the pool.\n";

Options parseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i], value = i + 1 < argc ? argv[i + 1] : "";
    if (name == "--help" || name == "-h") std::fputs(kHelp, stdout), std::exit(0);
    size_t number = 0;
    bool known = name == "--chunks", ok = known || parseSize(value, number);
    for (auto [flag, field] : {std::pair{"--bytes", &options.bytes}, std::pair{"--reps", &options.reps},
                               std::pair{"--slot", &options.slotBytes}, std::pair{"--slots", &options.slots},
                               std::pair{"--pool", &options.poolBytes}})
      if (name == flag) *field = number, known = true;
    if (name == "--chunks") options.chunks.clear();
    for (size_t start = 0, comma = 0; name == "--chunks" && ok && start <= value.size(); start = comma + 1) {
      comma = std::min(value.find(',', start), value.size());
      ok = parseSize(value.substr(start, comma - start), number);
      options.chunks.push_back(number);
    }
    ok = ok && known && options.reps <= 100000;
    ++i;
    if (!ok) std::fprintf(stderr, "copy_paths: bad option %s %s\n%s", name.c_str(), value.c_str(), kHelp), std::exit(2);
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parseOptions(argc, argv);
  const size_t bytes = options.bytes, stride = (bytes + 4095) / 4096 * 4096;
  // Four pools (a source and a destination in each process) of the warm buffer plus the cold ones; keep them within
  // half of the memory available.
  size_t coldCount = std::max<size_t>(2, (options.poolBytes + stride - 1) / stride);
  const size_t budget = static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES) * sysconf(_SC_PAGESIZE)) / 2;
  if (const size_t fitting = budget / (4 * stride); fitting < coldCount + 1) {
    if (fitting < 2) fail("not enough memory for four pools of two " + sizeText(bytes) + " buffers");
    coldCount = fitting - 1;
    std::printf("# memory is short (%zu MiB free): cold pools of %zu buffers\n", budget * 2 / kMiB, coldCount);
  }
  const size_t flags = 2 + options.slots, dataOffset = (flags * sizeof(Flag) + 4095) / 4096 * 4096;
  auto* shared = static_cast<uint8_t*>(mmap(nullptr, dataOffset + options.slots * options.slotBytes,
                                            PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shared == MAP_FAILED) fail(std::string("mmap of the FIFO: ") + std::strerror(errno));
  auto* flag = reinterpret_cast<Flag*>(shared);
  for (size_t i = 0; i < flags; ++i) new (flag + i) Flag;
  const Ring ring{flag, flag + 1, flag + 2, shared + dataOffset, options.slotBytes, options.slots};
  int commandPipe[2], replyPipe[2];
  if (pipe(commandPipe) != 0 || pipe(replyPipe) != 0) fail(std::string("pipe: ") + std::strerror(errno));
  std::fflush(stdout);
  const pid_t peer = fork();
  if (peer < 0) fail(std::string("fork: ") + std::strerror(errno));
  if (peer == 0) _exit(runPeer(options, coldCount + 1, stride, ring, commandPipe[0], replyPipe[1]));
  signal(SIGPIPE, SIG_IGN);  // a dead peer shows up as a failed write, reported, not as a silent exit
  close(commandPipe[0]), close(replyPipe[1]);

  const Pool source = mapPool(coldCount + 1, stride, kDriverSourceTag, bytes),
             dest = mapPool(coldCount + 1, stride, 0, 0);
  uint64_t peerBases[2];  // the peer's source and destination pools, for CMA
  if (!pipeAll(false, replyPipe[0], peerBases, sizeof peerBases)) fail("the peer process failed to start");
  auto order = [&](Command command) {
    if (!pipeAll(true, commandPipe[1], &command, sizeof command)) fail("the peer process is gone");
  };
  auto reply = [&]() {
    uint64_t value = 0;
    if (!pipeAll(false, replyPipe[0], &value, sizeof value)) fail("the peer process is gone");
    return value;
  };

  // CMA needs ptrace-like rights over the peer (Yama's ptrace_scope, a container's seccomp can refuse them).
  uint8_t probe[8];
  int cmaError = cmaMove(false, peer, probe, peerBases[0], sizeof probe, sizeof probe);
  if (cmaError == 0) cmaError = cmaMove(true, peer, probe, peerBases[1], sizeof probe, sizeof probe);
  if (cmaError != 0 && cmaError != EPERM && cmaError != ENOSYS) fail(std::string("CMA: ") + std::strerror(cmaError));
  if (cmaError != 0) std::printf("cma: not allowed here (%s)\n", std::strerror(cmaError));

  // One timed run; returns GB/s of bytes delivered into the destination. `verify` checks those bytes.
  size_t nextCold = 0;
  uint64_t epoch = 0;
  auto run = [&](const Case& c, bool verify) {
    const size_t index = c.cold ? 1 + nextCold++ % coldCount : 0;
    const bool write = c.kind == Kind::kCmaWrite, fromPeer = c.kind == Kind::kCmaRead || c.kind == Kind::kFifo;
    const uint64_t seed = (fromPeer ? kPeerSourceTag : kDriverSourceTag) << 32 | index;
    if (verify && write) order({Order::kPoison, index, seed}), reply();  // the destination is the peer's
    if (verify && !write) checkOrPoison(dest.at(index), bytes, seed, true);
    if (c.kind == Kind::kFifo) {  // a clean ring, and the sender spinning at the start line before the clock starts
      for (size_t slot = 0; slot < ring.slots; ++slot) ring.seq[slot].value.store(0, std::memory_order_relaxed);
      order({Order::kFifoSend, index, 0, ++epoch});
      waitFor(ring.ready->value, epoch);
    }
    int error = 0;
    const Clock::time_point start = Clock::now();
    if (c.kind == Kind::kMemcpy) std::memcpy(dest.at(index), source.at(index), bytes);
    if (c.kind == Kind::kFifo) ring.go->value.store(epoch, std::memory_order_release);
    if (c.kind == Kind::kFifo) fifoMove(ring, dest.at(index), bytes, false);
    if (c.kind == Kind::kCmaRead || write)
      error = cmaMove(write, peer, write ? source.at(index) : dest.at(index), peerBases[write] + index * stride, bytes,
                      c.chunk);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (error != 0) fail(std::string(kindName(c.kind)) + ": " + std::strerror(error));
    if (c.kind == Kind::kFifo) reply();
    const bool ok = !verify || (write ? (order({Order::kCheck, index, seed}), reply() == 1)
                                      : checkOrPoison(dest.at(index), bytes, seed, false));
    if (!ok) fail(std::string(kindName(c.kind)) + " " + sizeText(c.chunk) + " delivered wrong bytes");
    return static_cast<double>(bytes) / seconds / 1e9;
  };

  std::vector<Case> cases;
  const std::string fifoLabel = sizeText(options.slotBytes) + "x" + std::to_string(options.slots);
  for (bool cold : {false, true}) {
    cases.push_back({Kind::kMemcpy, cold, bytes, "-", {}});
    for (size_t chunk : options.chunks)
      if (cmaError == 0) cases.push_back({Kind::kCmaRead, cold, chunk, sizeText(chunk), {}});
    if (cmaError == 0) cases.push_back({Kind::kCmaWrite, cold, kMiB, "1M", {}});
    cases.push_back({Kind::kFifo, cold, options.slotBytes, fifoLabel, {}});
  }
  utsname host{};
  uname(&host);
  std::printf("# copy_paths on %s %s %s %s, %ld CPUs, S = %zu bytes (%s), %zu reps, cold pools %zu x S per side\n",
              host.sysname, host.nodename, host.release, host.machine, sysconf(_SC_NPROCESSORS_ONLN), bytes,
              sizeText(bytes).c_str(), options.reps, coldCount);
  for (size_t rep = 0; rep < options.reps; ++rep)  // interleaved: the order rotates every repetition
    for (size_t k = 0; k < cases.size(); ++k) {
      Case& c = cases[(k + rep) % cases.size()];
      c.gbps.push_back(run(c, rep == 0));
    }
  order({Order::kExit});
  int status = 0;
  if (waitpid(peer, &status, 0) != peer || !WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("the peer failed");

  std::printf("%-5s %-11s %7s %8s %16s\n", "mode", "case", "chunk", "GB/s", "ratio-to-memcpy");
  std::string verdict = "# faster:";
  for (bool cold : {false, true}) {
    const char* mode = cold ? "cold" : "warm";
    double memcpyMedian = 0, fifoMedian = 0, bestCma = 0;
    size_t bestChunk = 0;
    for (const Case& c : cases) {
      if (c.cold != cold) continue;
      const double gbps = median(c.gbps);
      if (c.kind == Kind::kMemcpy) memcpyMedian = gbps;
      if (c.kind == Kind::kFifo) fifoMedian = gbps;
      if (c.kind == Kind::kCmaRead && gbps > bestCma) bestCma = gbps, bestChunk = c.chunk;
      std::printf("%-5s %-11s %7s %8.2f %16.2f\n", mode, kindName(c.kind), c.chunkLabel.c_str(), gbps,
                  gbps / memcpyMedian);
    }
    char line[200];
    std::snprintf(line, sizeof line, " %s: cma-read not measured;", mode);
    if (bestCma > 0)
      std::snprintf(line, sizeof line, " %s: %s is %.2fx faster (cma-read best chunk %s %.2f GB/s, fifo %.2f GB/s);",
                    mode, bestCma > fifoMedian ? "cma-read" : "fifo 2-copy",
                    std::max(bestCma, fifoMedian) / std::min(bestCma, fifoMedian), sizeText(bestChunk).c_str(), bestCma,
                    fifoMedian);
    verdict += line;
  }
  verdict.pop_back();
  std::printf("%s\n", verdict.c_str());
  return 0;
}
