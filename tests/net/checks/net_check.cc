// net_check: one rank of a multi-process, multi-host check of Weft through its public API only.
// Started like torchrun's workers: RANK and WORLD_SIZE in the environment, the rendezvous at
// NCCL_COMM_ID=<ip>:<port> (rank 0 serves it). Modes:
//   net_check [--max-bytes N]        every collective, send/recv and a split, checked exactly;
//                                    one line per check, a summary, exit 0 only when all passed
//   net_check --until-error S        AllReduce in a loop until a call fails with ncclRemoteError or
//                                    ncclSystemError (exit 0, printing the error and how long after
//                                    the event it came); exit 3 when no error came within S seconds
//   net_check --die-after N          AllReduce N times, then SIGKILL itself (a peer dying mid-run)
// --encrypt-env VAR: call ncclSetEncryption with the pre-shared key held by environment variable VAR
// before anything else (TLS on the library's sockets; an empty VAR calls it with encryption off).
// --event-file PATH: the moment of "the event" as nanoseconds since the epoch. --die-after writes
// it just before dying; a test script writes it when it cuts a link; --until-error reads it.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "checks.h"

namespace netcheck {
namespace {

struct Options {
  size_t maxBytes = size_t(16) << 20;
  double untilError = 0;  // seconds; 0 = not this mode
  long dieAfter = -1;     // iterations; -1 = not this mode
  std::string eventFile;
  double deadline = 300;  // the check mode's watchdog, seconds
  size_t loopCount = 65536;
  std::string encryptEnv;  // --encrypt-env
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "net_check: %s\nusage: RANK=r WORLD_SIZE=n NCCL_COMM_ID=ip:port net_check [--max-bytes N[K|M]] "
               "[--until-error SECONDS | --die-after N] [--event-file PATH] [--deadline SECONDS] [--loop-count N] "
               "[--encrypt-env VAR]\n",
               why);
  std::exit(2);
}

size_t parseBytes(const std::string& s) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) usage(("not a size: " + s).c_str());
  if (*end == 'K' || *end == 'k')
    v <<= 10, ++end;
  else if (*end == 'M' || *end == 'm')
    v <<= 20, ++end;
  if (*end) usage(("not a size: " + s).c_str());
  return size_t(v);
}

double parseNumber(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end || v < 0) usage(("not a non-negative number: " + s).c_str());
  return v;
}

Options parseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--max-bytes")
      o.maxBytes = parseBytes(value());
    else if (a == "--until-error")
      o.untilError = parseNumber(value());
    else if (a == "--die-after")
      o.dieAfter = long(parseNumber(value()));
    else if (a == "--event-file")
      o.eventFile = value();
    else if (a == "--deadline")
      o.deadline = parseNumber(value());
    else if (a == "--loop-count")
      o.loopCount = parseBytes(value());
    else if (a == "--encrypt-env")
      o.encryptEnv = value();
    else
      usage(("unknown argument " + a).c_str());
  }
  if (o.untilError > 0 && o.dieAfter >= 0) usage("--until-error and --die-after exclude each other");
  return o;
}

int envInt(const char* name) {
  const char* v = std::getenv(name);
  char* end = nullptr;
  long x = v ? std::strtol(v, &end, 10) : -1;
  if (!v || !*v || *end || x < 0) usage((std::string(name) + " must be set to a non-negative integer").c_str());
  return int(x);
}

int64_t nowEpochNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The AllReduce loop of --until-error and --die-after. Returns the exit code.
int loop(const Options& o, Ctx& ctx) {
  Report& rep = *ctx.rep;
  Buf<float> in(o.loopCount), out(o.loopCount);
  for (size_t i = 0; i < o.loopCount; ++i) in.v[i] = input<float>(ncclSum, ctx.nranks, 7, ctx.rank, i);
  const float want0 = reduced<float>(ncclSum, ctx.nranks, 7, 0);
  auto lastOk = std::chrono::steady_clock::now();
  for (long it = 0;; ++it) {
    if (o.dieAfter >= 0 && it == o.dieAfter) {
      if (!o.eventFile.empty()) std::ofstream(o.eventFile) << nowEpochNs() << "\n";
      std::printf("[rank %d] dying (SIGKILL) after %ld iterations\n", ctx.rank, it);
      std::fflush(stdout);
      raise(SIGKILL);
    }
    rep.step("allreduce loop iteration " + std::to_string(it));
    ncclResult_t r = ncclAllReduce(in.data(), out.data(), o.loopCount, ncclFloat32, ncclSum, ctx.comm, nullptr);
    if (r == ncclSuccess) {
      if (o.loopCount > 0 && out.v[0] != want0) {
        rep.fail("allreduce loop", "iteration " + std::to_string(it) + " computed a wrong sum");
        return 1;
      }
      lastOk = std::chrono::steady_clock::now();
      if (it == 2) {  // a test script waits for this line before it breaks something
        std::printf("[rank %d] LOOP-RUNNING\n", ctx.rank);
        std::fflush(stdout);
      }
      continue;
    }
    const char* last = ncclGetLastError(ctx.comm);
    if (o.untilError <= 0 || (r != ncclRemoteError && r != ncclSystemError)) {
      rep.fail("allreduce loop",
               "iteration " + std::to_string(it) + ": " + ncclGetErrorString(r) + ": " + (last ? last : ""));
      return 1;
    }
    std::string since;
    int64_t eventNs = 0;
    if (!o.eventFile.empty() && (std::ifstream(o.eventFile) >> eventNs) && eventNs > 0)
      since = std::to_string((nowEpochNs() - eventNs) / 1000000) + " ms after the event";
    else
      since = std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - lastOk)
                      .count()) +
              " ms after the last successful call (no event time)";
    std::printf("[rank %d] ERROR-REPORTED after %ld iterations, %s: %s (%d): %s\n", ctx.rank, it, since.c_str(),
                ncclGetErrorString(r), int(r), last && *last ? last : "(no message)");
    std::fflush(stdout);
    rep.step("ncclCommAbort after the error");
    ncclCommAbort(ctx.comm);
    ctx.comm = nullptr;
    return 0;
  }
}

int run(int argc, char** argv) {
  const Options o = parseArgs(argc, argv);
  const int rank = envInt("RANK"), nranks = envInt("WORLD_SIZE");
  if (rank >= nranks) usage("RANK must be below WORLD_SIZE");
  const char* commId = std::getenv("NCCL_COMM_ID");
  if (!commId || !*commId) usage("NCCL_COMM_ID=<ip>:<port> must be set (rank 0 serves the rendezvous there)");
  const char* host = std::getenv("WEFT_HOST_ID");
  std::printf("[rank %d] net_check rank %d of %d, NCCL_COMM_ID=%s, WEFT_HOST_ID=%s, pid %d\n", rank, rank, nranks,
              commId, host ? host : "(unset)", int(getpid()));
  std::fflush(stdout);

  Report rep(rank, nranks);
  Ctx ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  ctx.rep = &rep;
  ctx.maxBytes = o.maxBytes;
  const bool looping = o.untilError > 0 || o.dieAfter >= 0;
  Watchdog dog(rep, o.untilError > 0 ? o.untilError : o.deadline,
               o.untilError > 0 ? "no call failed (a hang, or the failure went unnoticed)" : "the run did not finish");
  try {
    if (!o.encryptEnv.empty()) {
      const char* key = std::getenv(o.encryptEnv.c_str());
      ncclEncryptionConfig_t enc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
      enc.mode = key && *key ? NCCL_ENCRYPTION_MODE_PSK : NCCL_ENCRYPTION_MODE_NONE;
      enc.psk = key && *key ? key : nullptr;
      rep.step("ncclSetEncryption");
      rep.call(ncclSetEncryption(&enc), "ncclSetEncryption", nullptr);
    }
    ncclUniqueId id;
    rep.step("ncclGetUniqueId");
    rep.call(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr);
    rep.step("ncclCommInitRank");
    rep.call(ncclCommInitRank(&ctx.comm, nranks, id, rank), "ncclCommInitRank", nullptr);
    if (looping) return loop(o, ctx);
    runCollectiveChecks(ctx);
    runP2PChecks(ctx);
    runSplitChecks(ctx);
    rep.step("ncclCommDestroy");
    rep.call(ncclCommDestroy(ctx.comm), "ncclCommDestroy", nullptr);
    ctx.comm = nullptr;
  } catch (const CallFailed& e) {
    rep.fail("call", e.what());
    if (ctx.comm) {
      rep.step("ncclCommAbort after a failed call");
      ncclCommAbort(ctx.comm);
    }
    if (looping) return 1;
  }
  return rep.summary();
}

}  // namespace
}  // namespace netcheck

int main(int argc, char** argv) { return netcheck::run(argc, argv); }
