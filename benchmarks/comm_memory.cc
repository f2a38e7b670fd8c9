// comm_memory: what one communicator holds, in shared memory and on the heap, after it has run
// each kind of operation once (connections are made lazily, so a fresh communicator holds less).
//   comm_memory -N 8      8 ranks as processes of this host (default 2)
// Every rank prints one line; the shared-memory figure counts the FIFOs the rank created (each FIFO
// is created by its receiver) and its rank block. Heap is the growth of malloc'd bytes over init
// and the operations (glibc mallinfo2), buffers of this program excluded; threads and file
// descriptors are the growth of /proc/self/task and /proc/self/fd.
#include <dirent.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nccl.h"
#include "weft/weft.h"

namespace {

// Entries of a /proc directory (threads, open descriptors), less "." and "..".
int countEntries(const char* path) {
  DIR* d = opendir(path);
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - (strcmp(path, "/proc/self/fd") == 0 ? 1 : 0);  // the descriptor opendir itself holds
}

int runRank(int nranks, int rank, const ncclUniqueId& id) {
  const size_t count = 16 << 20;  // 64 MiB of float: every ring channel and slot gets used
  std::vector<float> in(count, 1.0f), out(count * nranks > (64u << 20) ? count : count * nranks);
  std::vector<float> a2a(size_t(nranks) * 1024, 1.0f), a2aOut(a2a.size());
  size_t heap0 = mallinfo2().uordblks;
  const int threads0 = countEntries("/proc/self/task"), fds0 = countEntries("/proc/self/fd");
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", rank, ncclGetLastError(nullptr));
    return 1;
  }
  size_t heapInit = mallinfo2().uordblks;
  char state[512];
  weftCommDumpState(comm, state, sizeof state);
  if (rank == 0)
    printf("after init     rank 0: heap +%zu bytes, threads +%d, fds +%d; %s\n", heapInit - heap0,
           countEntries("/proc/self/task") - threads0, countEntries("/proc/self/fd") - fds0, state);
  bool ok = ncclAllReduce(in.data(), in.data(), count, ncclFloat, ncclSum, comm, nullptr) == ncclSuccess &&
            ncclAlltoAll(a2a.data(), a2aOut.data(), 1024, ncclFloat, comm, nullptr) == ncclSuccess;
  size_t heapOps = mallinfo2().uordblks;
  weftCommDumpState(comm, state, sizeof state);
  printf("after ops      rank %d: heap +%zu bytes, threads +%d, fds +%d; %s\n", rank, heapOps - heap0,
         countEntries("/proc/self/task") - threads0, countEntries("/proc/self/fd") - fds0, state);
  fflush(stdout);
  ncclCommDestroy(comm);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int nranks = 2;
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], "-N") == 0) nranks = atoi(argv[i + 1]);
  if (nranks < 1) return 2;
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
  for (int r = 0; r < nranks; ++r) {
    if (fork() == 0) _exit(runRank(nranks, r, id));
  }
  int failed = 0;
  for (int r = 0; r < nranks; ++r) {
    int status = 0;
    wait(&status);
    failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  return failed;
}
