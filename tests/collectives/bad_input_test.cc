// Bad input: every call returns the right code (never crashes, never hangs) and leaves a message
// for ncclGetLastError that names the cause.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

// Checks the code, then that ncclGetLastError(comm) mentions one of the words.
#define EXPECT_NCCL_ERR(call, want, comm, ...)                                                             \
  do {                                                                                                     \
    const ncclResult_t _got = (call);                                                                      \
    EXPECT_EQ(_got, want) << #call << " returned " << ncclGetErrorString(_got) << "; last error: \""       \
                          << lastError(comm) << "\"";                                                      \
    if (_got != ncclSuccess) {                                                                             \
      const std::string _msg = lastError(comm);                                                            \
      EXPECT_TRUE(mentionsAny(_msg, {__VA_ARGS__}))                                                        \
          << #call << ": ncclGetLastError gave \"" << _msg << "\", which names none of: " << #__VA_ARGS__; \
    }                                                                                                      \
  } while (0)

// A one-rank communicator: arguments are checked before any peer is involved.
class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ASSERT_EQ(ncclCommInitRank(&comm_, 1, id, 0), ncclSuccess) << lastError(nullptr);
    buf_.assign(1024, 1.0f);
  }
  void TearDown() override {
    if (comm_) {
      EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess) << lastError(comm_);
    }
  }
  // After the bad calls the communicator still works.
  void expectStillWorks() {
    std::vector<float> out(16, 0.0f);
    ASSERT_EQ(ncclAllReduce(buf_.data(), out.data(), 16, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess)
        << lastError(comm_);
    EXPECT_EQ(out[0], 1.0f);
  }
  ncclComm_t comm_ = nullptr;
  std::vector<float> buf_;
};

TEST_F(BadInput, NullComm) {
  float* b = buf_.data();
  EXPECT_NCCL_ERR(ncclAllReduce(b, b, 4, ncclFloat32, ncclSum, nullptr, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclBroadcast(b, b, 4, ncclFloat32, 0, nullptr, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclBcast(b, 4, ncclFloat32, 0, nullptr, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclReduce(b, b, 4, ncclFloat32, ncclSum, 0, nullptr, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclAllGather(b, b, 4, ncclFloat32, nullptr, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclReduceScatter(b, b, 4, ncclFloat32, ncclSum, nullptr, nullptr), ncclInvalidArgument, nullptr,
                  "comm");
  EXPECT_NCCL_ERR(ncclAlltoAll(b, b + 8, 4, ncclFloat32, nullptr, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclGather(b, b + 8, 4, ncclFloat32, 0, nullptr, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclScatter(b, b + 8, 4, ncclFloat32, 0, nullptr, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclSend(b, 4, ncclFloat32, 0, nullptr, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclRecv(b, 4, ncclFloat32, 0, nullptr, nullptr), ncclInvalidArgument, nullptr, "comm");
  int v = 0;
  EXPECT_NCCL_ERR(ncclCommCount(nullptr, &v), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclCommUserRank(nullptr, &v), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclCommCuDevice(nullptr, &v), ncclInvalidArgument, nullptr, "comm");
  ncclComm_t sub;
  EXPECT_NCCL_ERR(ncclCommSplit(nullptr, 0, 0, &sub, nullptr), ncclInvalidArgument, nullptr, "comm");
  ncclRedOp_t op;
  float scalar = 1;
  EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, nullptr),
                  ncclInvalidArgument, nullptr, "comm");
  // As in NCCL, destroying or aborting NULL is a no-op.
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(nullptr), ncclSuccess);
}

TEST_F(BadInput, NotALiveCommunicator) {
  struct {
    unsigned char junk[4096];
  } fake;
  memset(&fake, 0x5a, sizeof(fake));
  auto bogus = reinterpret_cast<ncclComm_t>(&fake);
  float* b = buf_.data();
  int v = 0;
  EXPECT_NCCL_ERR(ncclAllReduce(b, b, 4, ncclFloat32, ncclSum, bogus, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclCommCount(bogus, &v), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclSend(b, 4, ncclFloat32, 0, bogus, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclCommDestroy(bogus), ncclInvalidArgument, nullptr, "comm");

  // A communicator that was destroyed.
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t gone = nullptr;
  ASSERT_EQ(ncclCommInitRank(&gone, 1, id, 0), ncclSuccess);
  ASSERT_EQ(ncclCommDestroy(gone), ncclSuccess);
  EXPECT_NCCL_ERR(ncclAllReduce(b, b, 4, ncclFloat32, ncclSum, gone, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclCommUserRank(gone, &v), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclCommDestroy(gone), ncclInvalidArgument, nullptr, "comm");
  expectStillWorks();
}

TEST_F(BadInput, NullBuffersWithCount) {
  float* b = buf_.data();
  EXPECT_NCCL_ERR(ncclAllReduce(nullptr, b, 4, ncclFloat32, ncclSum, comm_, nullptr), ncclInvalidArgument, comm_,
                  "buff", "null", "pointer");
  EXPECT_NCCL_ERR(ncclAllReduce(b, nullptr, 4, ncclFloat32, ncclSum, comm_, nullptr), ncclInvalidArgument, comm_,
                  "buff", "null", "pointer");
  EXPECT_NCCL_ERR(ncclAllGather(nullptr, b, 4, ncclFloat32, comm_, nullptr), ncclInvalidArgument, comm_, "buff", "null",
                  "pointer");
  EXPECT_NCCL_ERR(ncclReduceScatter(b, nullptr, 4, ncclFloat32, ncclSum, comm_, nullptr), ncclInvalidArgument, comm_,
                  "buff", "null", "pointer");
  EXPECT_NCCL_ERR(ncclBroadcast(nullptr, b, 4, ncclFloat32, 0, comm_, nullptr), ncclInvalidArgument, comm_, "buff",
                  "null", "pointer");
  EXPECT_NCCL_ERR(ncclBcast(nullptr, 4, ncclFloat32, 0, comm_, nullptr), ncclInvalidArgument, comm_, "buff", "null",
                  "pointer");
  EXPECT_NCCL_ERR(ncclAlltoAll(nullptr, b, 4, ncclFloat32, comm_, nullptr), ncclInvalidArgument, comm_, "buff", "null",
                  "pointer");
  EXPECT_NCCL_ERR(ncclGather(b, nullptr, 4, ncclFloat32, 0, comm_, nullptr), ncclInvalidArgument, comm_, "buff", "null",
                  "pointer");
  EXPECT_NCCL_ERR(ncclScatter(nullptr, b, 4, ncclFloat32, 0, comm_, nullptr), ncclInvalidArgument, comm_, "buff",
                  "null", "pointer");
  EXPECT_NCCL_ERR(ncclSend(nullptr, 4, ncclFloat32, 0, comm_, nullptr), ncclInvalidArgument, comm_, "buff", "null",
                  "pointer");
  EXPECT_NCCL_ERR(ncclRecv(nullptr, 4, ncclFloat32, 0, comm_, nullptr), ncclInvalidArgument, comm_, "buff", "null",
                  "pointer");
  expectStillWorks();
}

TEST_F(BadInput, NullBuffersWithZeroCountAreFine) {
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess) << lastError(comm_);
  EXPECT_EQ(ncclBroadcast(nullptr, nullptr, 0, ncclFloat32, 0, comm_, nullptr), ncclSuccess) << lastError(comm_);
  EXPECT_EQ(ncclReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, 0, comm_, nullptr), ncclSuccess) << lastError(comm_);
  EXPECT_EQ(ncclAllGather(nullptr, nullptr, 0, ncclFloat32, comm_, nullptr), ncclSuccess) << lastError(comm_);
  EXPECT_EQ(ncclReduceScatter(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess)
      << lastError(comm_);
  EXPECT_EQ(ncclAlltoAll(nullptr, nullptr, 0, ncclFloat32, comm_, nullptr), ncclSuccess) << lastError(comm_);
  EXPECT_EQ(ncclGather(nullptr, nullptr, 0, ncclFloat32, 0, comm_, nullptr), ncclSuccess) << lastError(comm_);
  EXPECT_EQ(ncclScatter(nullptr, nullptr, 0, ncclFloat32, 0, comm_, nullptr), ncclSuccess) << lastError(comm_);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(nullptr, 0, ncclFloat32, 0, comm_, nullptr), ncclSuccess) << lastError(comm_);
  EXPECT_EQ(ncclRecv(nullptr, 0, ncclFloat32, 0, comm_, nullptr), ncclSuccess) << lastError(comm_);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << lastError(comm_);
  expectStillWorks();
}

TEST_F(BadInput, BadDatatype) {
  float* b = buf_.data();
  // 63 and 66 border Weft's complex types (64, 65), which are valid.
  for (int dt : {12, -1, 1000, 63, 66}) {
    const auto t = static_cast<ncclDataType_t>(dt);
    EXPECT_NCCL_ERR(ncclAllReduce(b, b, 4, t, ncclSum, comm_, nullptr), ncclInvalidArgument, comm_, "type");
    EXPECT_NCCL_ERR(ncclBroadcast(b, b, 4, t, 0, comm_, nullptr), ncclInvalidArgument, comm_, "type");
    EXPECT_NCCL_ERR(ncclAllGather(b, b, 4, t, comm_, nullptr), ncclInvalidArgument, comm_, "type");
    EXPECT_NCCL_ERR(ncclSend(b, 4, t, 0, comm_, nullptr), ncclInvalidArgument, comm_, "type");
    ncclRedOp_t op;
    float scalar = 1;
    EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(&op, &scalar, t, ncclScalarHostImmediate, comm_), ncclInvalidArgument,
                    comm_, "type");
  }
  expectStillWorks();
}

TEST_F(BadInput, BadReductionOp) {
  float* b = buf_.data();
  for (int op : {5, 99, -1}) {  // 5: no user op was created; 99: nothing like it; -1: negative
    const auto o = static_cast<ncclRedOp_t>(op);
    EXPECT_NCCL_ERR(ncclAllReduce(b, b, 4, ncclFloat32, o, comm_, nullptr), ncclInvalidArgument, comm_, "op",
                    "reduction");
    EXPECT_NCCL_ERR(ncclReduce(b, b, 4, ncclFloat32, o, 0, comm_, nullptr), ncclInvalidArgument, comm_, "op",
                    "reduction");
    EXPECT_NCCL_ERR(ncclReduceScatter(b, b, 4, ncclFloat32, o, comm_, nullptr), ncclInvalidArgument, comm_, "op",
                    "reduction");
    EXPECT_NCCL_ERR(ncclRedOpDestroy(o, comm_), ncclInvalidArgument, comm_, "op", "reduction");
  }
  // A destroyed user op is gone.
  ncclRedOp_t op;
  float scalar = 2;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm_), ncclSuccess);
  ASSERT_EQ(ncclRedOpDestroy(op, comm_), ncclSuccess);
  EXPECT_NCCL_ERR(ncclAllReduce(b, b, 4, ncclFloat32, op, comm_, nullptr), ncclInvalidArgument, comm_, "op",
                  "reduction");
  EXPECT_NCCL_ERR(ncclRedOpDestroy(op, comm_), ncclInvalidArgument, comm_, "op", "reduction");
  // A built-in op cannot be destroyed.
  EXPECT_NCCL_ERR(ncclRedOpDestroy(ncclSum, comm_), ncclInvalidArgument, comm_, "op", "reduction");
  // A PreMulSum op is made for one datatype.
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm_), ncclSuccess);
  std::vector<double> d(4, 1.0);
  EXPECT_NCCL_ERR(ncclAllReduce(d.data(), d.data(), 4, ncclFloat64, op, comm_, nullptr), ncclInvalidArgument, comm_,
                  "op", "type");
  EXPECT_EQ(ncclRedOpDestroy(op, comm_), ncclSuccess);
  // ... and for the communicator it was made on.
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t other = nullptr;
  ASSERT_EQ(ncclCommInitRank(&other, 1, id, 0), ncclSuccess);
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, other), ncclSuccess);
  if (op != ncclNumOps) {  // the first user op of both communicators may share a number; skip then
    EXPECT_NCCL_ERR(ncclAllReduce(b, b, 4, ncclFloat32, op, comm_, nullptr), ncclInvalidArgument, comm_, "op",
                    "reduction");
  }
  EXPECT_EQ(ncclRedOpDestroy(op, other), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(other), ncclSuccess);
  // The scalar must be given.
  EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(&op, nullptr, ncclFloat32, ncclScalarHostImmediate, comm_),
                  ncclInvalidArgument, comm_, "scalar", "null", "pointer");
  EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(nullptr, &scalar, ncclFloat32, ncclScalarHostImmediate, comm_),
                  ncclInvalidArgument, comm_, "op", "null", "pointer");
  EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, static_cast<ncclScalarResidence_t>(7), comm_),
                  ncclInvalidArgument, comm_, "residence", "scalar");
  expectStillWorks();
}

TEST_F(BadInput, BadRoot) {
  float* b = buf_.data();
  for (int root : {-1, 1, 1000}) {  // nranks is 1
    EXPECT_NCCL_ERR(ncclBroadcast(b, b, 4, ncclFloat32, root, comm_, nullptr), ncclInvalidArgument, comm_, "root");
    EXPECT_NCCL_ERR(ncclBcast(b, 4, ncclFloat32, root, comm_, nullptr), ncclInvalidArgument, comm_, "root");
    EXPECT_NCCL_ERR(ncclReduce(b, b, 4, ncclFloat32, ncclSum, root, comm_, nullptr), ncclInvalidArgument, comm_,
                    "root");
    EXPECT_NCCL_ERR(ncclGather(b, b + 8, 4, ncclFloat32, root, comm_, nullptr), ncclInvalidArgument, comm_, "root");
    EXPECT_NCCL_ERR(ncclScatter(b, b + 8, 4, ncclFloat32, root, comm_, nullptr), ncclInvalidArgument, comm_, "root");
  }
  expectStillWorks();
}

TEST_F(BadInput, BadPeer) {
  float* b = buf_.data();
  for (int peer : {-1, 1, 1000}) {
    EXPECT_NCCL_ERR(ncclSend(b, 4, ncclFloat32, peer, comm_, nullptr), ncclInvalidArgument, comm_, "peer");
    EXPECT_NCCL_ERR(ncclRecv(b, 4, ncclFloat32, peer, comm_, nullptr), ncclInvalidArgument, comm_, "peer");
  }
  // Inside a group too; the group then reports the failure (or nothing is left to run).
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_NCCL_ERR(ncclSend(b, 4, ncclFloat32, 3, comm_, nullptr), ncclInvalidArgument, comm_, "peer");
  const ncclResult_t end = ncclGroupEnd();
  EXPECT_TRUE(end == ncclSuccess || end == ncclInvalidArgument) << ncclGetErrorString(end);
  expectStillWorks();
}

TEST_F(BadInput, CountOverflow) {
  float* b = buf_.data();
  const size_t huge = SIZE_MAX / 2;  // x 4 bytes overflows size_t
  EXPECT_NCCL_ERR(ncclAllReduce(b, b, huge, ncclFloat32, ncclSum, comm_, nullptr), ncclInvalidArgument, comm_,
                  "overflow", "count", "size", "large");
  EXPECT_NCCL_ERR(ncclBroadcast(b, b, huge, ncclFloat32, 0, comm_, nullptr), ncclInvalidArgument, comm_, "overflow",
                  "count", "size", "large");
  EXPECT_NCCL_ERR(ncclAllGather(b, b, huge, ncclFloat32, comm_, nullptr), ncclInvalidArgument, comm_, "overflow",
                  "count", "size", "large");
  EXPECT_NCCL_ERR(ncclAlltoAll(b, b + 8, huge, ncclFloat32, comm_, nullptr), ncclInvalidArgument, comm_, "overflow",
                  "count", "size", "large");
  EXPECT_NCCL_ERR(ncclSend(b, huge, ncclFloat32, 0, comm_, nullptr), ncclInvalidArgument, comm_, "overflow", "count",
                  "size", "large");
  EXPECT_NCCL_ERR(ncclAllReduce(b, b, SIZE_MAX, ncclFloat64, ncclSum, comm_, nullptr), ncclInvalidArgument, comm_,
                  "overflow", "count", "size", "large");
  expectStillWorks();
}

TEST_F(BadInput, AlltoAllvArrays) {
  float* b = buf_.data();
  const size_t counts[1] = {4}, displs[1] = {0}, far[1] = {SIZE_MAX - 2};
  EXPECT_NCCL_ERR(ncclAlltoAllv(b, nullptr, displs, b + 8, counts, displs, ncclFloat32, comm_, nullptr),
                  ncclInvalidArgument, comm_, "count", "null", "pointer");
  EXPECT_NCCL_ERR(ncclAlltoAllv(b, counts, nullptr, b + 8, counts, displs, ncclFloat32, comm_, nullptr),
                  ncclInvalidArgument, comm_, "displ", "null", "pointer");
  EXPECT_NCCL_ERR(ncclAlltoAllv(b, counts, displs, b + 8, nullptr, displs, ncclFloat32, comm_, nullptr),
                  ncclInvalidArgument, comm_, "count", "null", "pointer");
  EXPECT_NCCL_ERR(ncclAlltoAllv(b, counts, displs, b + 8, counts, nullptr, ncclFloat32, comm_, nullptr),
                  ncclInvalidArgument, comm_, "displ", "null", "pointer");
  // A displacement plus count beyond size_t.
  EXPECT_NCCL_ERR(ncclAlltoAllv(b, counts, far, b + 8, counts, displs, ncclFloat32, comm_, nullptr),
                  ncclInvalidArgument, comm_, "overflow", "displ", "count", "size", "large");
  expectStillWorks();
}

// weftAllGatherv and weftReduceScatterv: their arrays, and the checks every collective makes.
TEST_F(BadInput, UnevenCollectiveArguments) {
  float* b = buf_.data();
  const size_t counts[1] = {4}, displs[1] = {0}, far[1] = {SIZE_MAX - 2}, huge[1] = {SIZE_MAX / 2};
  EXPECT_NCCL_ERR(weftAllGatherv(b, b + 8, nullptr, displs, ncclFloat32, comm_, nullptr), ncclInvalidArgument, comm_,
                  "recvcounts");
  EXPECT_NCCL_ERR(weftAllGatherv(b, b + 8, counts, nullptr, ncclFloat32, comm_, nullptr), ncclInvalidArgument, comm_,
                  "displs");
  EXPECT_NCCL_ERR(weftReduceScatterv(b, b + 8, nullptr, displs, ncclFloat32, ncclSum, comm_, nullptr),
                  ncclInvalidArgument, comm_, "recvcounts");
  EXPECT_NCCL_ERR(weftReduceScatterv(b, b + 8, counts, nullptr, ncclFloat32, ncclSum, comm_, nullptr),
                  ncclInvalidArgument, comm_, "displs");
  // displs + count beyond size_t, and a block beyond the address space.
  EXPECT_NCCL_ERR(weftAllGatherv(b, b + 8, counts, far, ncclFloat32, comm_, nullptr), ncclInvalidArgument, comm_,
                  "overflow");
  EXPECT_NCCL_ERR(weftReduceScatterv(b, b + 8, counts, far, ncclFloat32, ncclSum, comm_, nullptr), ncclInvalidArgument,
                  comm_, "overflow");
  EXPECT_NCCL_ERR(weftAllGatherv(b, b + 8, huge, displs, ncclFloat32, comm_, nullptr), ncclInvalidArgument, comm_,
                  "overflow");
  // Datatype, op, stream, communicator, buffers.
  EXPECT_NCCL_ERR(weftAllGatherv(b, b + 8, counts, displs, static_cast<ncclDataType_t>(-1), comm_, nullptr),
                  ncclInvalidArgument, comm_, "datatype");
  EXPECT_NCCL_ERR(weftReduceScatterv(b, b + 8, counts, displs, ncclFloat32, static_cast<ncclRedOp_t>(999), comm_,
                                     nullptr),
                  ncclInvalidArgument, comm_, "op");
  EXPECT_NCCL_ERR(weftAllGatherv(b, b + 8, counts, displs, ncclFloat32, comm_, badStream()), ncclInvalidArgument, comm_,
                  "stream");
  EXPECT_NCCL_ERR(weftReduceScatterv(b, b + 8, counts, displs, ncclFloat32, ncclSum, comm_, badStream()),
                  ncclInvalidArgument, comm_, "stream");
  EXPECT_NCCL_ERR(weftAllGatherv(b, b + 8, counts, displs, ncclFloat32, nullptr, nullptr), ncclInvalidArgument, nullptr,
                  "comm");
  EXPECT_NCCL_ERR(weftAllGatherv(nullptr, b + 8, counts, displs, ncclFloat32, comm_, nullptr), ncclInvalidArgument,
                  comm_, "sendbuff");
  EXPECT_NCCL_ERR(weftReduceScatterv(b, nullptr, counts, displs, ncclFloat32, ncclSum, comm_, nullptr),
                  ncclInvalidArgument, comm_, "recvbuff");
  // Zero counts need no buffers.
  const size_t zero[1] = {0};
  EXPECT_EQ(weftAllGatherv(nullptr, nullptr, zero, displs, ncclFloat32, comm_, nullptr), ncclSuccess)
      << lastError(comm_);
  EXPECT_EQ(weftReduceScatterv(nullptr, nullptr, zero, far, ncclFloat32, ncclAvg, comm_, nullptr), ncclSuccess)
      << lastError(comm_);
  // Inside a group, a refused call fails the group.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(weftAllGatherv(b, b + 8, nullptr, displs, ncclFloat32, comm_, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  expectStillWorks();
}

TEST_F(BadInput, NonNullStreamInHostMode) {
  float* b = buf_.data();
  const Stream s = badStream();
  EXPECT_NCCL_ERR(ncclAllReduce(b, b, 4, ncclFloat32, ncclSum, comm_, s), ncclInvalidArgument, comm_, "stream");
  EXPECT_NCCL_ERR(ncclBroadcast(b, b, 4, ncclFloat32, 0, comm_, s), ncclInvalidArgument, comm_, "stream");
  EXPECT_NCCL_ERR(ncclBcast(b, 4, ncclFloat32, 0, comm_, s), ncclInvalidArgument, comm_, "stream");
  EXPECT_NCCL_ERR(ncclReduce(b, b, 4, ncclFloat32, ncclSum, 0, comm_, s), ncclInvalidArgument, comm_, "stream");
  EXPECT_NCCL_ERR(ncclAllGather(b, b, 4, ncclFloat32, comm_, s), ncclInvalidArgument, comm_, "stream");
  EXPECT_NCCL_ERR(ncclReduceScatter(b, b, 4, ncclFloat32, ncclSum, comm_, s), ncclInvalidArgument, comm_, "stream");
  EXPECT_NCCL_ERR(ncclAlltoAll(b, b + 8, 4, ncclFloat32, comm_, s), ncclInvalidArgument, comm_, "stream");
  EXPECT_NCCL_ERR(ncclGather(b, b + 8, 4, ncclFloat32, 0, comm_, s), ncclInvalidArgument, comm_, "stream");
  EXPECT_NCCL_ERR(ncclScatter(b, b + 8, 4, ncclFloat32, 0, comm_, s), ncclInvalidArgument, comm_, "stream");
  EXPECT_NCCL_ERR(ncclSend(b, 4, ncclFloat32, 0, comm_, s), ncclInvalidArgument, comm_, "stream");
  EXPECT_NCCL_ERR(ncclRecv(b, 4, ncclFloat32, 0, comm_, s), ncclInvalidArgument, comm_, "stream");
  const size_t counts[1] = {4}, displs[1] = {0};
  EXPECT_NCCL_ERR(ncclAlltoAllv(b, counts, displs, b + 8, counts, displs, ncclFloat32, comm_, s), ncclInvalidArgument,
                  comm_, "stream");
  expectStillWorks();
}

TEST_F(BadInput, CallsAfterAbortAreInvalid) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t c = nullptr;
  ASSERT_EQ(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
  ASSERT_EQ(ncclCommAbort(c), ncclSuccess);
  float* b = buf_.data();
  int v;
  EXPECT_NCCL_ERR(ncclAllReduce(b, b, 4, ncclFloat32, ncclSum, c, nullptr), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclCommCount(c, &v), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclCommDestroy(c), ncclInvalidArgument, nullptr, "comm");
  EXPECT_NCCL_ERR(ncclCommAbort(c), ncclInvalidArgument, nullptr, "comm");
  expectStillWorks();
}

TEST_F(BadInput, NullOutputPointers) {
  EXPECT_NCCL_ERR(ncclCommCount(comm_, nullptr), ncclInvalidArgument, comm_, "null", "count", "pointer");
  EXPECT_NCCL_ERR(ncclCommUserRank(comm_, nullptr), ncclInvalidArgument, comm_, "null", "rank", "pointer");
  EXPECT_NCCL_ERR(ncclGetVersion(nullptr), ncclInvalidArgument, nullptr, "null", "version", "pointer");
  EXPECT_NCCL_ERR(ncclGetUniqueId(nullptr), ncclInvalidArgument, nullptr, "null", "id", "pointer");
  EXPECT_NCCL_ERR(ncclCommSplit(comm_, 0, 0, nullptr, nullptr), ncclInvalidArgument, comm_, "null", "comm", "pointer");
  EXPECT_NCCL_ERR(ncclMemAlloc(nullptr, 64), ncclInvalidArgument, nullptr, "null", "ptr", "pointer");
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  EXPECT_NCCL_ERR(ncclCommInitRank(nullptr, 1, id, 0), ncclInvalidArgument, nullptr, "null", "comm", "pointer");
  expectStillWorks();
}

TEST_F(BadInput, RevokeFlagsMustBeZero) {
  EXPECT_NCCL_ERR(ncclCommRevoke(comm_, 1), ncclInvalidArgument, comm_, "flag");
  EXPECT_NCCL_ERR(ncclCommRevoke(comm_, -1), ncclInvalidArgument, comm_, "flag");
  expectStillWorks();
}

TEST(BadInit, RankAndCountOutOfRange) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  struct {
    int nranks, rank;
  } bad[] = {{0, 0}, {-1, 0}, {-5, -1}, {2, 2}, {2, -1}, {3, 7}, {INT_MIN, 0}};
  for (const auto& b : bad) {
    ncclComm_t c = nullptr;
    const double t0 = nowSeconds();
    EXPECT_NCCL_ERR(ncclCommInitRank(&c, b.nranks, id, b.rank), ncclInvalidArgument, nullptr, "rank");
    EXPECT_LT(nowSeconds() - t0, 2.0) << "a bad nranks/rank must be refused at once, not after waiting for peers";
    if (c) ncclCommDestroy(c);
  }
  ncclComm_t c = nullptr;
  EXPECT_NCCL_ERR(ncclCommInitAll(&c, 0, nullptr), ncclInvalidArgument, nullptr, "dev", "count", "rank", "ndev");
  EXPECT_NCCL_ERR(ncclCommInitAll(nullptr, 2, nullptr), ncclInvalidArgument, nullptr, "null", "comm", "pointer");
}

TEST(BadInit, ConfigNullIsDefaultButGarbageIsRefused) {
  {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ncclComm_t c = nullptr;
    ASSERT_EQ(ncclCommInitRankConfig(&c, 1, id, 0, nullptr), ncclSuccess) << lastError(nullptr);
    EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  }
  ncclConfig_t wrongMagic = NCCL_CONFIG_INITIALIZER;
  wrongMagic.magic = 0x12345678;
  ncclConfig_t garbage;
  memset(&garbage, 0xAB, sizeof(garbage));
  ncclConfig_t wrongSize = NCCL_CONFIG_INITIALIZER;
  wrongSize.size = 3;
  for (ncclConfig_t* cfg : {&wrongMagic, &garbage, &wrongSize}) {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ncclComm_t c = nullptr;
    EXPECT_NCCL_ERR(ncclCommInitRankConfig(&c, 1, id, 0, cfg), ncclInvalidArgument, nullptr, "config", "magic", "size");
    if (c) ncclCommDestroy(c);
  }
}

// A config from an older nccl.h is read only as far as its size: a 2.28 program's struct ends at
// nvlinkCentricSched, and what follows it in memory (here 0 where 2.30 has numRmaCtx, which
// must be at least 1) is not the config. The same bytes in a 2.30-sized struct are refused.
TEST(BadInit, ConfigIsReadOnlyAsFarAsItsSize) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.numRmaCtx = 0;
  cfg.size = offsetof(ncclConfig_t, nvlinkCentricSched) + sizeof(int);  // NCCL 2.28's ncclConfig_t
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t c = nullptr;
  EXPECT_EQ(ncclCommInitRankConfig(&c, 1, id, 0, &cfg), ncclSuccess) << lastError(nullptr);
  if (c) {
    EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  }
  cfg.size = sizeof(ncclConfig_t);
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  c = nullptr;
  EXPECT_NCCL_ERR(ncclCommInitRankConfig(&c, 1, id, 0, &cfg), ncclInvalidArgument, nullptr, "numRmaCtx");
  if (c) ncclCommDestroy(c);
}

// NCCL 2.31/2.32's fields: values from their enums and ranges work, anything else is refused with
// the field's name, and a 2.30 program's shorter struct is never read that far.
TEST(BadInit, NewerConfigFieldsAreCheckedAndReadOnlyAsFarAsTheSize) {
  auto init = [](ncclConfig_t* cfg, ncclComm_t* c) {
    ncclUniqueId id;
    EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    *c = nullptr;
    return ncclCommInitRankConfig(c, 1, id, 0, cfg);
  };
  ncclComm_t c = nullptr;
  ncclConfig_t good = NCCL_CONFIG_INITIALIZER;
  good.launchOrderImplicit = 1;
  good.numRmaSig = 4;
  good.rmaEagerInit = 1;
  good.hostCftMode = ncclHostCftFallback;
  good.nvlsHostMode = ncclNvlsHostModeDisableTransport | ncclNvlsHostModeDisableSymmetricMultimem;
  ASSERT_EQ(init(&good, &c), ncclSuccess) << lastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  good.nvlsHostMode = ncclNvlsHostModeDisable;
  ASSERT_EQ(init(&good, &c), ncclSuccess) << lastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);

  struct Bad {
    int ncclConfig_t::*field;
    int value;
    const char* name;
  } bad[] = {{&ncclConfig_t::launchOrderImplicit, 2, "launchOrderImplicit"},
             {&ncclConfig_t::numRmaSig, 0, "numRmaSig"},
             {&ncclConfig_t::rmaEagerInit, -1, "rmaEagerInit"},
             {&ncclConfig_t::hostCftMode, 7, "hostCftMode"},
             {&ncclConfig_t::nvlsHostMode, -5, "nvlsHostMode"}};
  for (const Bad& b : bad) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.*b.field = b.value;
    EXPECT_NCCL_ERR(init(&cfg, &c), ncclInvalidArgument, nullptr, b.name);
    if (c) ncclCommDestroy(c);
    cfg.size = offsetof(ncclConfig_t, graphStreamOrdering) + sizeof(int);  // NCCL 2.30's ncclConfig_t
    EXPECT_EQ(init(&cfg, &c), ncclSuccess) << b.name << ": " << lastError(nullptr);
    if (c) {
      EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
    }
  }
}

// A struct whose integers are wrong is refused before its string pointers are followed: junk
// there (an uninitialised struct with the right header) must not crash the library.
TEST(BadInit, ConfigWithBadFieldsIsRefusedBeforeItsStringsAreRead) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 7;
  cfg.netName = reinterpret_cast<const char*>(uintptr_t{16});  // unmapped: reading it would fault
  cfg.commName = reinterpret_cast<const char*>(uintptr_t{24});
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t c = nullptr;
  EXPECT_NCCL_ERR(ncclCommInitRankConfig(&c, 1, id, 0, &cfg), ncclInvalidArgument, nullptr, "blocking");
  if (c) ncclCommDestroy(c);
}

TEST(BadGroup, EndWithoutStart) {
  // In a thread of its own so that no group state can leak into other tests.
  std::thread([] {
    const ncclResult_t r = ncclGroupEnd();
    EXPECT_EQ(r, ncclInvalidUsage) << ncclGetErrorString(r);
    EXPECT_TRUE(mentionsAny(lastError(nullptr), {"group"})) << lastError(nullptr);
    // The failed call did not break group bookkeeping.
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  }).join();
}

TEST(BadGroup, SimulateEndChecksItsStruct) {
  std::thread([] {
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ncclResult_t r = ncclGroupSimulateEnd(nullptr);
    EXPECT_EQ(r, ncclInvalidArgument) << ncclGetErrorString(r);
    EXPECT_TRUE(mentionsAny(lastError(nullptr), {"simInfo"})) << "message: \"" << lastError(nullptr) << "\"";
    ncclSimInfo_t zeroed{};
    r = ncclGroupSimulateEnd(&zeroed);
    EXPECT_EQ(r, ncclInvalidArgument) << ncclGetErrorString(r);
    EXPECT_TRUE(mentionsAny(lastError(nullptr), {"NCCL_SIM_INFO_INITIALIZER"})) << lastError(nullptr);
    // The rejected calls left the group open: a proper one ends it.
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess);
    EXPECT_EQ(info.estimatedTime, 0.0f);
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  }).join();
}

// Both ranks of a 2-rank communicator make the same bad calls; afterwards the communicator works.
TEST(BadInputMultiRank, CommunicatorSurvivesRejectedCalls) {
  EXPECT_RUN_OK(runRanks(Mode::kThreads, 2, [](RankCtx& ctx) {
    std::vector<float> b(64, 1.0f);
    ctx.expect(ncclAllReduce(b.data(), b.data(), 4, static_cast<ncclDataType_t>(12), ncclSum, ctx.comm, nullptr),
               ncclInvalidArgument, "AllReduce with datatype 12", ctx.comm);
    ctx.expect(ncclBroadcast(b.data(), b.data(), 4, ncclFloat32, 2, ctx.comm, nullptr), ncclInvalidArgument,
               "Broadcast with root == nranks", ctx.comm);
    ctx.expect(ncclSend(b.data(), 4, ncclFloat32, 2, ctx.comm, nullptr), ncclInvalidArgument, "Send to peer 2",
               ctx.comm);
    ctx.expect(ncclAllReduce(b.data(), b.data(), 4, ncclFloat32, ncclSum, ctx.comm, badStream()), ncclInvalidArgument,
               "AllReduce on a stream", ctx.comm);
    if (!ctx.ok(ncclAllReduce(b.data(), b.data(), 64, ncclFloat32, ncclSum, ctx.comm, nullptr), "AllReduce", ctx.comm))
      return;
    if (b[0] != 2.0f || b[63] != 2.0f) ctx.failf("AllReduce after rejected calls gave %g, expected 2", b[0]);
  }));
}

// count fits in size_t, count x nranks does not: every rank must refuse (not crash, not hang).
TEST(BadInputMultiRank, CountTimesNranksOverflow) {
  EXPECT_RUN_OK(runRanks(Mode::kThreads, 2, [](RankCtx& ctx) {
    std::vector<int8_t> b(64, 1);
    const size_t count = SIZE_MAX / 2 + 1;  // x 2 ranks wraps to 0
    int8_t* p = b.data();
    ctx.expect(ncclAllGather(p, p, count, ncclInt8, ctx.comm, nullptr), ncclInvalidArgument, "AllGather", ctx.comm);
    ctx.expect(ncclReduceScatter(p, p, count, ncclInt8, ncclSum, ctx.comm, nullptr), ncclInvalidArgument,
               "ReduceScatter", ctx.comm);
    ctx.expect(ncclAlltoAll(p, p + 32, count, ncclInt8, ctx.comm, nullptr), ncclInvalidArgument, "AlltoAll", ctx.comm);
    ctx.expect(ncclGather(p, p + 32, count, ncclInt8, 0, ctx.comm, nullptr), ncclInvalidArgument, "Gather", ctx.comm);
    ctx.expect(ncclScatter(p, p + 32, count, ncclInt8, 1, ctx.comm, nullptr), ncclInvalidArgument, "Scatter", ctx.comm);
    std::vector<int32_t> v(8, 1);
    if (!ctx.ok(ncclAllReduce(v.data(), v.data(), 8, ncclInt32, ncclSum, ctx.comm, nullptr), "AllReduce afterwards",
                ctx.comm))
      return;
    if (v[7] != 2) ctx.failf("AllReduce after the rejected calls gave %d, expected 2", v[7]);
  }));
}

// Ranks that disagree on nranks: the odd one out gets ncclInvalidUsage, nobody hangs. Whether the
// odd rank reaches the rendezvous first or last must not matter.
void mismatchedNranks(bool oddRankFirst) {
  WEFT_REQUIRE_FRESH_PROCESS("this test sets WEFT_TIMEOUT_MS");
  ScopedEnv timeout("WEFT_TIMEOUT_MS", "3000");
  RunOptions opts;
  opts.initComm = false;
  opts.deadlineMs = 30000;
  const double t0 = nowSeconds();
  EXPECT_RUN_OK(runRanks(
      Mode::kThreads, 3,
      [oddRankFirst](RankCtx& ctx) {
        const bool odd = ctx.rank == 2;
        if (odd != oddRankFirst) std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const int claimed = odd ? 4 : 3;
        const ncclResult_t r = ncclCommInitRank(&ctx.comm, claimed, ctx.id, ctx.rank);
        if (r == ncclSuccess) {
          ctx.failf("ncclCommInitRank(nranks=%d) succeeded although rank 2 said nranks=4", claimed);
          return;
        }
        ctx.comm = nullptr;
        if (!odd) return;  // the others fail too (any code): their peer set never completes
        ctx.expect(r, ncclInvalidUsage, "ncclCommInitRank from the rank with the odd nranks");
        const std::string msg = lastError(nullptr);
        if (!mentionsAny(msg, {"nranks", "mismatch", "disagree", "differ"}))
          ctx.failf("ncclGetLastError after the mismatched init does not say why: \"%s\"", msg.c_str());
      },
      opts));
  EXPECT_LT(nowSeconds() - t0, 15.0) << "with WEFT_TIMEOUT_MS=3000 every rank should have returned well before this";
}

TEST(BadInit, MismatchedNranksOddRankLast) { mismatchedNranks(false); }
TEST(BadInit, MismatchedNranksOddRankFirst) { mismatchedNranks(true); }

}  // namespace
}  // namespace weft_test
