// A small job that writes a trace (WEFT_TRACE_FILE) for tests/trace/check_trace.py to read.
//
//   trace_job NRANKS [--only-rank0-traces]
//
// The parent makes the unique id and starts NRANKS fresh processes of this program (fork and
// exec, so each reads its own environment when it first calls Weft): with --only-rank0-traces
// only rank 0 keeps WEFT_TRACE_FILE, which must not keep the others from joining the clock
// measurement. Each rank runs a known list of calls, which the checker compares with its file:
//   AllReduce x3 (1 Ki, 256 Ki, 8 B floats), AllGather, Broadcast (root 1), ReduceScatter,
//   a group of Send/Recv around the ring, a split into even and odd ranks with one AllReduce.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"

namespace {

#define CHECK(call)                                                                                           \
  do {                                                                                                        \
    ncclResult_t r_ = (call);                                                                                 \
    if (r_ != ncclSuccess) {                                                                                  \
      std::fprintf(stderr, "%s failed: %s (%s)\n", #call, ncclGetErrorString(r_), ncclGetLastError(nullptr)); \
      std::exit(1);                                                                                           \
    }                                                                                                         \
  } while (0)

int runRank(int rank, int nranks, const ncclUniqueId& id) {
  ncclComm_t comm = nullptr;
  CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  std::vector<float> a(65536 * nranks, 1.0f), b(65536 * nranks, 0.0f);
  for (size_t count : {size_t(1024), size_t(65536), size_t(2)})
    CHECK(ncclAllReduce(a.data(), b.data(), count, ncclFloat32, ncclSum, comm, nullptr));
  CHECK(ncclAllGather(a.data(), b.data(), 4096, ncclFloat32, comm, nullptr));
  // Through the per-call config entry point, with a tag that the trace and the profiler carry.
  ncclCollConfig_t tagged = NCCL_COLLCONFIG_INITIALIZER;
  tagged.userProfilerTag = 0x7e57;
  CHECK(ncclBroadcastConfig(a.data(), b.data(), 4096, ncclFloat32, 1 % nranks, comm, nullptr, &tagged));
  CHECK(ncclReduceScatter(a.data(), b.data(), 4096, ncclFloat32, ncclSum, comm, nullptr));
  CHECK(ncclGroupStart());
  CHECK(ncclSend(a.data(), 1000, ncclFloat32, (rank + 1) % nranks, comm, nullptr));
  CHECK(ncclRecv(b.data(), 1000, ncclFloat32, (rank + nranks - 1) % nranks, comm, nullptr));
  CHECK(ncclGroupEnd());
  ncclComm_t half = nullptr;
  CHECK(ncclCommSplit(comm, rank % 2, rank, &half, nullptr));
  CHECK(ncclAllReduce(a.data(), b.data(), 512, ncclFloat32, ncclSum, half, nullptr));
  CHECK(ncclCommDestroy(half));
  CHECK(ncclCommDestroy(comm));
  return 0;
}

std::string toHex(const ncclUniqueId& id) {
  std::string s;
  char b[3];
  for (unsigned char c : id.internal) {
    std::snprintf(b, sizeof b, "%02x", c);
    s += b;
  }
  return s;
}

ncclUniqueId fromHex(const char* s) {
  ncclUniqueId id;
  for (size_t i = 0; i < sizeof id.internal; ++i) {
    unsigned v = 0;
    std::sscanf(s + 2 * i, "%2x", &v);
    id.internal[i] = static_cast<char>(v);
  }
  return id;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "rank") == 0)
    return runRank(std::atoi(argv[2]), std::atoi(argv[3]), fromHex(argv[4]));
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s NRANKS [--only-rank0-traces]\n", argv[0]);
    return 2;
  }
  const int nranks = std::atoi(argv[1]);
  const bool onlyRank0 = argc > 2 && std::strcmp(argv[2], "--only-rank0-traces") == 0;
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id));
  const std::string hex = toHex(id), n = std::to_string(nranks);
  std::vector<pid_t> kids;
  for (int r = 0; r < nranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      if (onlyRank0 && r != 0) unsetenv("WEFT_TRACE_FILE");
      const std::string rank = std::to_string(r);
      execl("/proc/self/exe", argv[0], "rank", rank.c_str(), n.c_str(), hex.c_str(), static_cast<char*>(nullptr));
      std::perror("exec");
      _exit(127);
    }
    kids.push_back(pid);
  }
  int failed = 0;
  for (pid_t k : kids) {
    int status = 0;
    waitpid(k, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  if (failed != 0) std::fprintf(stderr, "%d of %d ranks failed\n", failed, nranks);
  return failed == 0 ? 0 : 1;
}
