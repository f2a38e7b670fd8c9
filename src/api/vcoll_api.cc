// weftAllGatherv and weftReduceScatterv (include/weft/weft.h): check the counts and
// displacements, record a Task whose vcounts carry them, enqueue it like any collective.
#include <algorithm>
#include <utility>
#include <vector>

#include "api/api_support.h"
#include "enqueue/group.h"
#include "weft/weft.h"

using namespace weft;

namespace {

// Two non-empty blocks that share an element: ncclInvalidArgument naming both.
ncclResult_t overlapError(const char* fn, ncclComm* comm, const size_t* counts, const size_t* displs, int a, int b) {
  return setError(comm, ncclInvalidArgument,
                  "%s: the blocks of rank %d (displs %zu, %zu elements) and rank %d (displs %zu, %zu elements) overlap",
                  fn, a, displs[a], counts[a], b, displs[b], counts[b]);
}

// The layout's checks; *total receives the sum of the counts, *extent the elements the layout
// spans (the largest displs[r] + recvcounts[r] of a non-empty block). Each block must fit the
// address space, and blocks with elements must not overlap: two ranks writing one element
// (AllGatherv) or one rank's result overwriting input another still reads (ReduceScatterv in
// place) would be silent corruption. Blocks in rank order (the usual layout) are checked in one
// pass; others are sorted first, which costs little next to moving them.
ncclResult_t checkLayout(const char* fn, ncclComm* comm, const size_t* counts, const size_t* displs,
                         ncclDataType_t dtype, size_t* total, size_t* extent) {
  if (counts == nullptr || displs == nullptr)
    return setError(comm, ncclInvalidArgument, "%s: %s is NULL", fn, counts == nullptr ? "recvcounts" : "displs");
  const int n = comm->nranks;
  *total = 0;
  *extent = 0;
  bool inOrder = true;
  int last = -1;  // the previous non-empty block, in rank order
  for (int r = 0; r < n; ++r) {
    size_t end = 0;
    if (__builtin_add_overflow(displs[r], counts[r], &end))
      return setError(comm, ncclInvalidArgument, "%s: displs[%d] + recvcounts[%d] (%zu + %zu) overflows size_t", fn, r,
                      r, displs[r], counts[r]);
    if (counts[r] == 0) continue;  // an empty block's displacement is never used: any value will do
    WEFT_CHECK(checkCount(fn, comm, end, dtype, 1));
    if (__builtin_add_overflow(*total, counts[r], total))
      return setError(comm, ncclInvalidArgument, "%s: the sum of recvcounts overflows size_t", fn);
    *extent = std::max(*extent, end);
    if (last >= 0 && displs[r] < displs[last]) inOrder = false;
    if (inOrder && last >= 0 && displs[last] + counts[last] > displs[r])
      return overlapError(fn, comm, counts, displs, last, r);
    last = r;
  }
  WEFT_CHECK(checkCount(fn, comm, *total, dtype, 1));
  if (inOrder) return ncclSuccess;
  std::vector<std::pair<size_t, int>> starts;  // (displacement, rank) of every non-empty block
  starts.reserve(n);
  for (int r = 0; r < n; ++r)
    if (counts[r] > 0) starts.emplace_back(displs[r], r);
  std::sort(starts.begin(), starts.end());
  for (size_t i = 1; i < starts.size(); ++i) {
    const int a = starts[i - 1].second, b = starts[i].second;
    if (displs[a] + counts[a] > displs[b]) return overlapError(fn, comm, counts, displs, a, b);
  }
  return ncclSuccess;
}

// What both entry points check before the layout: the communicator, stream and datatype, and that
// the communicator runs in host mode.
ncclResult_t checkCall(const char* fn, ncclComm* comm, const void* stream, ncclDataType_t dtype) {
  WEFT_CHECK(checkCommUsable(fn, comm));
  WEFT_CHECK(checkStream(fn, comm, stream));
  WEFT_CHECK(checkDtype(fn, comm, dtype));
  // The GPU executor has never run these kinds (no GPU was at hand to test it): refuse rather than
  // launch an untested kernel path.
  if (!comm->hostMode)
    return setError(comm, ncclInvalidUsage,
                    "%s: not built for GPU communicators yet; host-mode communicators (WEFT_DEVICE=host) run it", fn);
  return ncclSuccess;
}

Task makeVTask(ncclComm* comm, CollKind kind, const void* sendbuff, void* recvbuff, const size_t* counts,
               const size_t* displs, size_t total, ncclDataType_t dtype, ncclRedOp_t op) {
  Task t;
  t.comm = comm;
  t.kind = kind;
  t.sendbuff = sendbuff;
  t.recvbuff = recvbuff;
  t.count = total;
  t.dtype = dtype;
  t.op = op;
  t.vcounts.reserve(2 * size_t(comm->nranks));
  t.vcounts.insert(t.vcounts.end(), counts, counts + comm->nranks);
  t.vcounts.insert(t.vcounts.end(), displs, displs + comm->nranks);
  return t;
}

// Inside a group an argument error also fails the group (ncclGroupEnd reports it).
ncclResult_t submit(ncclResult_t checked, ncclComm* comm, CollKind kind, const void* sendbuff, void* recvbuff,
                    const size_t* counts, const size_t* displs, size_t total, ncclDataType_t dtype, ncclRedOp_t op) {
  if (checked != ncclSuccess) {
    groupRecordError(checked);
    return checked;
  }
  return enqueue(makeVTask(comm, kind, sendbuff, recvbuff, counts, displs, total, dtype, op));
}

}  // namespace

WEFT_API ncclResult_t weftAllGatherv(const void* sendbuff, void* recvbuff, const size_t recvcounts[],
                                     const size_t displs[], ncclDataType_t datatype, ncclComm_t comm,
                                     WEFT_STREAM_T stream) {
  keepEnumArgInRange(&datatype);
  return apiGuard("weftAllGatherv", [&] {
    const char* fn = "weftAllGatherv";
    size_t total = 0, extent = 0;
    ncclResult_t r = checkCall(fn, comm, stream, datatype);
    if (r == ncclSuccess) r = checkLayout(fn, comm, recvcounts, displs, datatype, &total, &extent);
    if (r == ncclSuccess) r = checkBuffer(fn, comm, sendbuff, recvcounts[comm->rank], "sendbuff");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, recvbuff, extent, "recvbuff");
    return submit(r, comm, CollKind::kAllGatherv, sendbuff, recvbuff, recvcounts, displs, total, datatype, ncclSum);
  });
}

WEFT_API ncclResult_t weftReduceScatterv(const void* sendbuff, void* recvbuff, const size_t recvcounts[],
                                         const size_t displs[], ncclDataType_t datatype, ncclRedOp_t op,
                                         ncclComm_t comm, WEFT_STREAM_T stream) {
  keepEnumArgInRange(&datatype);
  keepEnumArgInRange(&op);
  return apiGuard("weftReduceScatterv", [&] {
    const char* fn = "weftReduceScatterv";
    size_t total = 0, extent = 0;
    ncclResult_t r = checkCall(fn, comm, stream, datatype);
    if (r == ncclSuccess) r = checkOp(fn, comm, op, datatype);
    if (r == ncclSuccess) r = checkLayout(fn, comm, recvcounts, displs, datatype, &total, &extent);
    if (r == ncclSuccess) r = checkBuffer(fn, comm, sendbuff, extent, "sendbuff");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, recvbuff, recvcounts[comm->rank], "recvbuff");
    return submit(r, comm, CollKind::kReduceScatterv, sendbuff, recvbuff, recvcounts, displs, total, datatype, op);
  });
}
