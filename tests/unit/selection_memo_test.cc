// The thread's selection memo (tuning/select.h): a memoized answer equals a fresh one for every
// collective, datatype, reduction and count, also for calls that take turns; another
// communicator's tuner never takes one; and calls that per-call settings steer neither use the memo
// nor leave their answer in it.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "algorithm_names.h"
#include "tuner_inputs.h"
#include "tuning/select.h"

namespace weft {
namespace {

// Four ranks of one host in host mode, with the direct lane usable, so that DDA and (when enabled)
// low precision compete with the ring and the tree and the answer depends on every key field.
struct Fixture {
  param::Agreed agreed = param::localAgreed();
  CommShape shape;
  std::unique_ptr<Tuner> tuner;

  explicit Fixture(bool lowPrecision, const std::string& algo = "") {
    agreed.lowPrecision = lowPrecision;
    agreed.algo = algo;
    shape.rank = 1;
    shape.nranks = 4;
    shape.nLocal = 4;
    shape.nChannels = 4;
    shape.slotBytes = 128 * 1024;
    shape.agreed = &agreed;
    tuner = std::make_unique<Tuner>(fourRanksOneHost(), HostConstants{}, tunerOptionsFrom(agreed, "none"));
  }
};

std::vector<float> gBuffer(1 << 16);

Task taskOf(CollKind kind, ncclDataType_t dtype, ncclRedOp_t op, size_t count) {
  Task t;
  t.kind = kind;
  t.dtype = dtype;
  t.op = op;
  t.count = count;
  t.sendbuff = gBuffer.data();
  t.recvbuff = gBuffer.data() + gBuffer.size() / 2;
  return t;
}

std::string describe(const Task& t) {
  return std::string(collName(t.kind)) + " " + dataTypeName(t.dtype) + " op " + std::to_string(int(t.op)) + " x " +
         std::to_string(t.count);
}

void expectSameChoice(const Task& got, const Task& fresh) {
  EXPECT_EQ(got.algorithm, fresh.algorithm) << describe(fresh);
  EXPECT_EQ(got.protocol, fresh.protocol) << describe(fresh);
  EXPECT_EQ(got.nChannels, fresh.nChannels) << describe(fresh);
}

// Every call is made twice with the memo (a miss that fills it, then a hit) between calls that
// differ in one key field only, so a field the memo ignored would hand one call another's answer.
TEST(SelectionMemo, MemoizedChoicesEqualFreshOnes) {
  for (bool lowPrecision : {false, true}) {
    Fixture f(lowPrecision);
    SelectionMemo memo;
    std::set<int> algorithms;
    auto check = [&](CollKind kind, ncclDataType_t dtype, ncclRedOp_t op, size_t count) {
      for (int repeat = 0; repeat < 2; ++repeat) {
        Task fresh = taskOf(kind, dtype, op, count), got = fresh;
        selectAlgorithm(f.tuner.get(), f.shape, &fresh);
        selectAlgorithm(f.tuner.get(), f.shape, &got, &memo);
        expectSameChoice(got, fresh);
        algorithms.insert(int(fresh.algorithm));
      }
    };
    // Neighbours in this list differ in the datatype only, in the reduction only, or in both.
    const std::pair<ncclDataType_t, ncclRedOp_t> calls[] = {{ncclFloat32, ncclSum},  {ncclInt32, ncclSum},
                                                            {ncclFloat32, ncclSum},  {ncclFloat32, ncclMax},
                                                            {ncclBfloat16, ncclMax}, {ncclBfloat16, ncclSum}};
    const CollKind kinds[] = {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter,
                              CollKind::kBroadcast, CollKind::kReduce,    CollKind::kAlltoAll};
    const size_t counts[] = {2, 3000, size_t(1) << 20, 2, size_t(1) << 26};
    // Three sweeps, whose neighbours differ in the collective only, in the count only, and in the
    // datatype or reduction only.
    for (size_t count : counts)
      for (auto [dtype, op] : calls)
        for (CollKind kind : kinds) check(kind, dtype, op, count);
    for (CollKind kind : kinds)
      for (auto [dtype, op] : calls)
        for (size_t count : counts) check(kind, dtype, op, count);
    for (CollKind kind : kinds)
      for (size_t count : counts)
        for (auto [dtype, op] : calls) check(kind, dtype, op, count);
    // The sweep only proves something if the answers differ between calls.
    EXPECT_GE(algorithms.size(), lowPrecision ? 4u : 3u);
    if (lowPrecision) EXPECT_EQ(algorithms.count(int(Algo::kLowPrecision)), 1u);
  }
}

// The memo keeps a few answers, so that the calls of a repeated group hit. Calls that take turns,
// more of them than it keeps and some differing in the count alone, still get their own answers.
TEST(SelectionMemo, CallsTakingTurnsGetTheirOwnAnswers) {
  Fixture f(false);
  SelectionMemo memo;
  const Task calls[] = {taskOf(CollKind::kSend, ncclFloat32, ncclSum, 16),
                        taskOf(CollKind::kRecv, ncclFloat32, ncclSum, 16),
                        taskOf(CollKind::kAllReduce, ncclFloat32, ncclSum, 2),
                        taskOf(CollKind::kAllReduce, ncclFloat32, ncclSum, size_t(1) << 20),
                        taskOf(CollKind::kAlltoAll, ncclFloat32, ncclSum, 3000),
                        taskOf(CollKind::kBroadcast, ncclFloat32, ncclSum, size_t(1) << 20)};
  std::set<int> algorithms;
  for (int round = 0; round < 3; ++round)
    for (int width : {2, 4, 6})
      for (int i = 0; i < width; ++i) {
        Task fresh = calls[i], got = calls[i];
        selectAlgorithm(f.tuner.get(), f.shape, &fresh);
        selectAlgorithm(f.tuner.get(), f.shape, &got, &memo);
        expectSameChoice(got, fresh);
        algorithms.insert(int(fresh.algorithm));
      }
  EXPECT_GE(algorithms.size(), 3u) << "the calls must not all get one answer";
}

// Two communicators with different settings, one thread: the second never gets the first's answer.
TEST(SelectionMemo, AnotherCommunicatorsTunerDoesNotHit) {
  Fixture ring(false, "ring"), tree(false, "tree");
  SelectionMemo memo;
  for (int round = 0; round < 3; ++round)
    for (Fixture* f : {&ring, &tree}) {
      Task t = taskOf(CollKind::kAllReduce, ncclFloat32, ncclSum, size_t(1) << 20);
      selectAlgorithm(f->tuner.get(), f->shape, &t, &memo);
      EXPECT_EQ(t.algorithm, f == &ring ? Algo::kRing : Algo::kTree) << "round " << round;
    }
}

// A call with its own algSelection or channel bounds is chosen afresh, and the plain call after it
// still gets the plain answer.
TEST(SelectionMemo, PerCallSettingsBypassTheMemo) {
  Fixture f(false);
  SelectionMemo memo;
  Task plain = taskOf(CollKind::kAllReduce, ncclFloat32, ncclSum, size_t(1) << 20);
  Task reference = plain;
  selectAlgorithm(f.tuner.get(), f.shape, &reference);
  // A per-call selection of an algorithm other than the plain answer.
  const Algorithm other = reference.algorithm == Algo::kTree ? Algo::kRing : Algo::kTree;
  ASSERT_LT(reference.nChannels, 4) << "the test needs a plain answer on fewer than all channels";
  Task first = plain;
  selectAlgorithm(f.tuner.get(), f.shape, &first, &memo);  // fills the memo
  expectSameChoice(first, reference);

  Task otherOnly = plain;
  for (int p = 0; p < kNumProtocols; ++p) otherOnly.callRows |= uint64_t(1) << (int(other) * kNumProtocols + p);
  selectAlgorithm(f.tuner.get(), f.shape, &otherOnly, &memo);
  EXPECT_EQ(otherOnly.algorithm, other);

  Task allChannels = plain;
  allChannels.callMinChannels = 4;
  selectAlgorithm(f.tuner.get(), f.shape, &allChannels, &memo);
  EXPECT_EQ(allChannels.nChannels, 4);

  Task again = plain;
  selectAlgorithm(f.tuner.get(), f.shape, &again, &memo);
  expectSameChoice(again, reference);
}

}  // namespace
}  // namespace weft
