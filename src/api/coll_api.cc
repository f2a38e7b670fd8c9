// Collective and point-to-point entry points: check the arguments, record a Task, enqueue it.
#include "api/api_support.h"
#include "api/call_settings.h"
#include "enqueue/group.h"
#include "rccl/rccl.h"

using namespace weft;

namespace {

// Checks shared by every operation. `multiple` scales count for the largest buffer involved.
ncclResult_t checkCommon(const char* fn, ncclComm* comm, const void* stream, ncclDataType_t dtype, size_t count,
                         size_t multiple) {
  WEFT_CHECK(checkCommUsable(fn, comm));
  WEFT_CHECK(checkStream(fn, comm, stream));
  WEFT_CHECK(checkDtype(fn, comm, dtype));
  WEFT_CHECK(checkCount(fn, comm, count, dtype, multiple));
  return ncclSuccess;
}

// Inside a group an argument error also fails the group (ncclGroupEnd reports it). A call made
// through a nccl<Coll>Config entry point carries that call's settings (call_settings.h).
ncclResult_t submit(ncclResult_t checked, Task&& t) {
  if (const CallSettings* cs = currentCallSettings(); checked == ncclSuccess && cs != nullptr) {
    t.algSelection = cs->algSelection;
    t.forceAlgSelection = cs->forceAlgSelection;
    t.callMinChannels = cs->minChannels;
    t.callMaxChannels = cs->maxChannels;
    t.userProfilerTag = cs->userProfilerTag;
    checked = applyAlgSelection(cs->fn, &t);
  }
  if (checked != ncclSuccess) {
    groupRecordError(checked);
    return checked;
  }
  return enqueue(std::move(t));
}

Task makeTask(ncclComm* comm, CollKind kind, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t dtype,
              ncclRedOp_t op, int root, void* stream) {
  Task t;
  t.stream = stream;
  t.comm = comm;
  t.kind = kind;
  t.sendbuff = sendbuff;
  t.recvbuff = recvbuff;
  t.count = count;
  t.dtype = dtype;
  t.op = op;
  t.root = root;
  return t;
}

ncclResult_t reduceChecks(const char* fn, ncclComm* comm, const void* stream, ncclDataType_t dtype, ncclRedOp_t op,
                          size_t count, size_t multiple) {
  WEFT_CHECK(checkCommon(fn, comm, stream, dtype, count, multiple));
  return checkOp(fn, comm, op, dtype);
}

}  // namespace

WEFT_ALIAS(ncclResult_t, ncclAllReduce, const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
           cudaStream_t)
WEFT_API ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  keepEnumArgInRange(&datatype);
  keepEnumArgInRange(&op);
  return apiGuard("ncclAllReduce", [&] {
    const char* fn = "ncclAllReduce";
    ncclResult_t r = reduceChecks(fn, comm, stream, datatype, op, count, 1);
    if (r == ncclSuccess) r = checkBuffer(fn, comm, sendbuff, count, "sendbuff");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, recvbuff, count, "recvbuff");
    return submit(r, makeTask(comm, CollKind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, stream));
  });
}

// RCCL's AllReduce with a bias: the AllReduce, then op(result, acc) on this rank's result. Avg and
// PreMulSum add the bias, as RCCL does (its bias joins after the average, and a user operator's
// scalar applies to inputs only). Inside a group the bias is applied at ncclGroupEnd, once the
// group's operations are done.
WEFT_ALIAS(ncclResult_t, ncclAllReduceWithBias, const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
           cudaStream_t, const void*)
WEFT_API ncclResult_t pncclAllReduceWithBias(const void* sendbuff, void* recvbuff, size_t count,
                                             ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                             cudaStream_t stream, const void* acc) {
  keepEnumArgInRange(&datatype);
  keepEnumArgInRange(&op);
  return apiGuard("ncclAllReduceWithBias", [&] {
    const char* fn = "ncclAllReduceWithBias";
    ncclResult_t r = reduceChecks(fn, comm, stream, datatype, op, count, 1);
    if (r == ncclSuccess) r = checkBuffer(fn, comm, sendbuff, count, "sendbuff");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, recvbuff, count, "recvbuff");
    if (r == ncclSuccess && acc == nullptr) r = setError(comm, ncclInvalidArgument, "%s: acc (the bias) is NULL", fn);
    if (r == ncclSuccess && !comm->hostMode)
      r = setError(comm, ncclInvalidUsage,
                   "%s: not implemented on GPU communicators yet (the bias needs a kernel); host mode supports it", fn);
    ReduceSpec spec;
    const ncclRedOp_t biasOp = op == ncclAvg || static_cast<int>(op) >= ncclNumOps ? ncclSum : op;
    if (r == ncclSuccess && !makeReduceSpec(datatype, biasOp, 1, &spec))
      r = setError(comm, ncclInvalidArgument, "%s: op %d cannot combine a bias of %s", fn, static_cast<int>(op),
                   dataTypeName(datatype));
    auto applyBias = [spec, recvbuff, acc, count] {
      reduceCopy(spec, recvbuff, nullptr, acc, recvbuff, count, 0);
      return ncclSuccess;
    };
    const bool grouped = inGroup();
    r = submit(r, makeTask(comm, CollKind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, stream));
    if (r != ncclSuccess) return r;
    if (grouped) {
      groupAfter(applyBias);
      return ncclSuccess;
    }
    return applyBias();
  });
}

WEFT_ALIAS(ncclResult_t, ncclBroadcast, const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)
WEFT_API ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  keepEnumArgInRange(&datatype);
  return apiGuard("ncclBroadcast", [&] {
    const char* fn = "ncclBroadcast";
    ncclResult_t r = checkCommon(fn, comm, stream, datatype, count, 1);
    if (r == ncclSuccess) r = checkRank(fn, comm, root, "root");
    if (r == ncclSuccess && comm->rank == root) r = checkBuffer(fn, comm, sendbuff, count, "sendbuff");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, recvbuff, count, "recvbuff");
    return submit(r, makeTask(comm, CollKind::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, stream));
  });
}

WEFT_ALIAS(ncclResult_t, ncclBcast, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)
WEFT_API ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                 cudaStream_t stream) {
  keepEnumArgInRange(&datatype);
  return pncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

WEFT_ALIAS(ncclResult_t, ncclReduce, const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
           cudaStream_t)
WEFT_API ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  keepEnumArgInRange(&datatype);
  keepEnumArgInRange(&op);
  return apiGuard("ncclReduce", [&] {
    const char* fn = "ncclReduce";
    ncclResult_t r = reduceChecks(fn, comm, stream, datatype, op, count, 1);
    if (r == ncclSuccess) r = checkRank(fn, comm, root, "root");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, sendbuff, count, "sendbuff");
    if (r == ncclSuccess && comm->rank == root) r = checkBuffer(fn, comm, recvbuff, count, "recvbuff");
    return submit(r, makeTask(comm, CollKind::kReduce, sendbuff, recvbuff, count, datatype, op, root, stream));
  });
}

WEFT_ALIAS(ncclResult_t, ncclAllGather, const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t)
WEFT_API ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                     ncclComm_t comm, cudaStream_t stream) {
  keepEnumArgInRange(&datatype);
  return apiGuard("ncclAllGather", [&] {
    const char* fn = "ncclAllGather";
    ncclResult_t r = checkCommon(fn, comm, stream, datatype, sendcount, comm ? size_t(comm->nranks) : 1);
    if (r == ncclSuccess) r = checkBuffer(fn, comm, sendbuff, sendcount, "sendbuff");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, recvbuff, sendcount, "recvbuff");
    return submit(r, makeTask(comm, CollKind::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, stream));
  });
}

WEFT_ALIAS(ncclResult_t, ncclReduceScatter, const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
           cudaStream_t)
WEFT_API ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream) {
  keepEnumArgInRange(&datatype);
  keepEnumArgInRange(&op);
  return apiGuard("ncclReduceScatter", [&] {
    const char* fn = "ncclReduceScatter";
    ncclResult_t r = reduceChecks(fn, comm, stream, datatype, op, recvcount, comm ? size_t(comm->nranks) : 1);
    if (r == ncclSuccess) r = checkBuffer(fn, comm, sendbuff, recvcount, "sendbuff");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, recvbuff, recvcount, "recvbuff");
    return submit(r, makeTask(comm, CollKind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, stream));
  });
}

WEFT_ALIAS(ncclResult_t, ncclAlltoAll, const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t)
WEFT_API ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream) {
  keepEnumArgInRange(&datatype);
  return apiGuard("ncclAlltoAll", [&] {
    const char* fn = "ncclAlltoAll";
    ncclResult_t r = checkCommon(fn, comm, stream, datatype, count, comm ? size_t(comm->nranks) : 1);
    if (r == ncclSuccess) r = checkBuffer(fn, comm, sendbuff, count, "sendbuff");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, recvbuff, count, "recvbuff");
    if (r == ncclSuccess && sendbuff == recvbuff && count > 0 && comm->nranks > 1)
      r = setError(comm, ncclInvalidArgument, "%s: in-place AlltoAll (sendbuff == recvbuff) is not supported", fn);
    return submit(r, makeTask(comm, CollKind::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0, stream));
  });
}

WEFT_ALIAS(ncclResult_t, ncclGather, const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)
WEFT_API ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                  ncclComm_t comm, cudaStream_t stream) {
  keepEnumArgInRange(&datatype);
  return apiGuard("ncclGather", [&] {
    const char* fn = "ncclGather";
    ncclResult_t r = checkCommon(fn, comm, stream, datatype, count, comm ? size_t(comm->nranks) : 1);
    if (r == ncclSuccess) r = checkRank(fn, comm, root, "root");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, sendbuff, count, "sendbuff");
    if (r == ncclSuccess && comm->rank == root) r = checkBuffer(fn, comm, recvbuff, count, "recvbuff");
    return submit(r, makeTask(comm, CollKind::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root, stream));
  });
}

WEFT_ALIAS(ncclResult_t, ncclScatter, const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)
WEFT_API ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                   int root, ncclComm_t comm, cudaStream_t stream) {
  keepEnumArgInRange(&datatype);
  return apiGuard("ncclScatter", [&] {
    const char* fn = "ncclScatter";
    ncclResult_t r = checkCommon(fn, comm, stream, datatype, count, comm ? size_t(comm->nranks) : 1);
    if (r == ncclSuccess) r = checkRank(fn, comm, root, "root");
    if (r == ncclSuccess && comm->rank == root) r = checkBuffer(fn, comm, sendbuff, count, "sendbuff");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, recvbuff, count, "recvbuff");
    return submit(r, makeTask(comm, CollKind::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root, stream));
  });
}

WEFT_ALIAS(ncclResult_t, ncclSend, const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)
WEFT_API ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                cudaStream_t stream) {
  keepEnumArgInRange(&datatype);
  return apiGuard("ncclSend", [&] {
    const char* fn = "ncclSend";
    ncclResult_t r = checkCommon(fn, comm, stream, datatype, count, 1);
    if (r == ncclSuccess) r = checkRank(fn, comm, peer, "peer");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, sendbuff, count, "sendbuff");
    return submit(r, makeTask(comm, CollKind::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer, stream));
  });
}

WEFT_ALIAS(ncclResult_t, ncclRecv, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)
WEFT_API ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                cudaStream_t stream) {
  keepEnumArgInRange(&datatype);
  return apiGuard("ncclRecv", [&] {
    const char* fn = "ncclRecv";
    ncclResult_t r = checkCommon(fn, comm, stream, datatype, count, 1);
    if (r == ncclSuccess) r = checkRank(fn, comm, peer, "peer");
    if (r == ncclSuccess) r = checkBuffer(fn, comm, recvbuff, count, "recvbuff");
    return submit(r, makeTask(comm, CollKind::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer, stream));
  });
}

// --- RCCL's extras ---

WEFT_ALIAS(ncclResult_t, ncclAlltoAllv, const void*, const size_t*, const size_t*, void*, const size_t*, const size_t*,
           ncclDataType_t, ncclComm_t, WEFT_STREAM_T)
WEFT_API ncclResult_t pncclAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                                     void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                                     ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream) {
  keepEnumArgInRange(&datatype);
  return apiGuard("ncclAlltoAllv", [&] {
    const char* fn = "ncclAlltoAllv";
    ncclResult_t r = checkCommon(fn, comm, stream, datatype, 0, 1);
    if (r == ncclSuccess &&
        (sendcounts == nullptr || sdispls == nullptr || recvcounts == nullptr || rdispls == nullptr))
      r = setError(comm, ncclInvalidArgument, "%s: a counts or displacements array is NULL", fn);
    Task t = makeTask(comm, CollKind::kAlltoAllv, sendbuff, recvbuff, 0, datatype, ncclSum, 0, stream);
    if (r == ncclSuccess) {
      const int n = comm->nranks;
      size_t sendTotal = 0, recvTotal = 0;
      for (int p = 0; p < n && r == ncclSuccess; ++p) {
        size_t sendEnd = 0, recvEnd = 0;
        if (__builtin_add_overflow(sdispls[p], sendcounts[p], &sendEnd) ||
            __builtin_add_overflow(rdispls[p], recvcounts[p], &recvEnd))
          r = setError(comm, ncclInvalidArgument, "%s: displacement plus count for peer %d overflows", fn, p);
        if (r == ncclSuccess) r = checkCount(fn, comm, sendEnd, datatype, 1);
        if (r == ncclSuccess) r = checkCount(fn, comm, recvEnd, datatype, 1);
        sendTotal += sendcounts[p];
        recvTotal += recvcounts[p];
      }
      if (r == ncclSuccess && sendcounts[comm->rank] != recvcounts[comm->rank])
        r = setError(comm, ncclInvalidArgument, "%s: rank %d sends %zu elements to itself but expects %zu", fn,
                     comm->rank, sendcounts[comm->rank], recvcounts[comm->rank]);
      if (r == ncclSuccess) r = checkBuffer(fn, comm, sendbuff, sendTotal, "sendbuff");
      if (r == ncclSuccess) r = checkBuffer(fn, comm, recvbuff, recvTotal, "recvbuff");
      if (r == ncclSuccess) {
        t.vcounts.reserve(4 * n);
        for (const size_t* a : {sendcounts, sdispls, recvcounts, rdispls}) t.vcounts.insert(t.vcounts.end(), a, a + n);
        t.count = sendTotal;
      }
    }
    return submit(r, std::move(t));
  });
}

WEFT_ALIAS(ncclResult_t, ncclAllToAllv, const void*, const size_t*, const size_t*, void*, const size_t*, const size_t*,
           ncclDataType_t, ncclComm_t, WEFT_STREAM_T)
WEFT_API ncclResult_t pncclAllToAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                                     void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                                     ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream) {
  keepEnumArgInRange(&datatype);
  return pncclAlltoAllv(sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, datatype, comm, stream);
}

WEFT_ALIAS(ncclResult_t, ncclAllToAll, const void*, void*, size_t, ncclDataType_t, ncclComm_t, WEFT_STREAM_T)
WEFT_API ncclResult_t pncclAllToAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclComm_t comm, WEFT_STREAM_T stream) {
  keepEnumArgInRange(&datatype);
  return pncclAlltoAll(sendbuff, recvbuff, count, datatype, comm, stream);
}
