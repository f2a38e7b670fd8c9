// Reusing a program for a repeat of the same call (enqueue/group.cc, AlgorithmDesc::reusable):
// a sealed program loses its identity on any change; every algorithm that says it is reusable
// builds the same program for every task with the same key, whatever else differs (buffers,
// streaming, published inputs, operation numbers, scalars), and builds it again the same; and DDA,
// which says it is not, really does build a different program the second time.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithm_names.h"
#include "collectives/registry.h"
#include "tests/unit/direct_sim.h"

namespace weft {
namespace {

std::string sameProgram(const Program& a, const Program& b) {
  if (a.steps.size() != b.steps.size() || a.sequences.size() != b.sequences.size())
    return "different sizes: " + std::to_string(a.steps.size()) + "/" + std::to_string(a.sequences.size()) +
           " steps/sequences against " + std::to_string(b.steps.size()) + "/" + std::to_string(b.sequences.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const Step &x = a.steps[i], &y = b.steps[i];
    if (x.op != y.op || x.flags != y.flags || x.srcBuf != y.srcBuf || x.dstBuf != y.dstBuf ||
        x.recvMask != y.recvMask || x.sendMask != y.sendMask || x.peer != y.peer || x.srcOffset != y.srcOffset ||
        x.dstOffset != y.dstOffset || x.count != y.count)
      return "step " + std::to_string(i) + " differs";
  }
  for (size_t i = 0; i < a.sequences.size(); ++i) {
    const Sequence &x = a.sequences[i], &y = b.sequences[i];
    bool same = x.task == y.task && x.scope == y.scope && x.lane == y.lane && x.channel == y.channel &&
                x.sendPeer == y.sendPeer && x.recvPeer == y.recvPeer && x.firstStep == y.firstStep &&
                x.nSteps == y.nSteps && x.nSendPeers == y.nSendPeers && x.nRecvPeers == y.nRecvPeers;
    for (int p = 0; p < kMaxSeqPeers; ++p)
      same = same && x.sendPeers[p] == y.sendPeers[p] && x.recvPeers[p] == y.recvPeers[p];
    if (!same) return "sequence " + std::to_string(i) + " differs";
  }
  return "";
}

TEST(ProgramReuse, SealedIdentityIsUniqueAndLostOnAnyChange) {
  Program a, b;
  EXPECT_EQ(a.sealedId(), 0u);
  a.startTask(0, 1);
  a.beginSequence(Lane::kRing, 0, 1, 1);
  a.addStep(StepOp::kSend, 0, 0, 0, 4);
  a.seal();
  b.seal();
  EXPECT_NE(a.sealedId(), 0u);
  EXPECT_NE(a.sealedId(), b.sealedId());
  const uint64_t first = a.sealedId();
  a.seal();
  EXPECT_NE(a.sealedId(), first) << "a second seal is a new identity, never an old one";
  a.addStep(StepOp::kRecv, 0, 0, 0, 4);
  EXPECT_EQ(a.sealedId(), 0u) << "addStep";
  a.seal();
  a.beginSequence(Lane::kRing, 1, 1, 1);
  EXPECT_EQ(a.sealedId(), 0u) << "beginSequence";
  a.seal();
  const int peers[kMaxSeqPeers] = {1, -1, -1};
  a.beginMultiPeerSequence(Lane::kTree, 0, peers, peers);
  EXPECT_EQ(a.sealedId(), 0u) << "beginMultiPeerSequence";
  a.seal();
  a.addPeerStep(StepOp::kSend, 0, 0, 1, Buf::kSend, 0, Buf::kRecv, 0, 4);
  EXPECT_EQ(a.sealedId(), 0u) << "addPeerStep";
  a.seal();
  a.clear();
  EXPECT_EQ(a.sealedId(), 0u) << "clear";
}

// Two tasks with the same key but nothing else in common, and the same task built twice.
TEST(ProgramReuse, ReusableAlgorithmsBuildOneProgramPerKey) {
  std::vector<float> bufA(64), bufB(64);
  int built = 0;
  for (int a = 0; a < algorithmCount(); ++a) {
    const AlgorithmDesc& d = algorithmDesc(Algorithm(a));
    if (!d.reusable) continue;
    for (int n : {1, 2, 3, 4})
      for (int kind = 0; kind < 32; ++kind) {
        // The kinds with per-peer counts never reuse (enqueue/group.cc): their counts are not in the key.
        if ((d.kinds & (1u << kind)) == 0 || hasPerPeerCounts(CollKind(kind))) continue;
        sim::DirectSim sim(n);
        for (int r : {0, n - 1})
          for (size_t count : {size_t(1), size_t(1000), size_t(300001)})
            for (Protocol proto : {Protocol::kSimple, Protocol::kLL})
              for (int channels : {1, 2})
                for (bool scratch : {false, true}) {
                  Task t;
                  t.comm = sim.comm(r);
                  t.kind = CollKind(kind);
                  t.algorithm = Algorithm(a);
                  t.protocol = proto;
                  t.nChannels = channels;
                  t.dtype = ncclFloat32;
                  t.op = ncclSum;
                  t.count = count;
                  t.root = n - 1;
                  t.sendbuff = bufA.data();
                  t.recvbuff = bufA.data() + 1;
                  t.scratch = scratch ? bufA.data() : nullptr;
                  const CommShape shape = commShape(t.comm);
                  if (eligibility(Algorithm(a), shape, t) == Eligibility::kNo) continue;
                  Task other = t;
                  other.sendbuff = bufB.data();
                  other.recvbuff = bufB.data();
                  other.scratch = scratch ? bufB.data() + 3 : nullptr;
                  other.streamOutput = true;
                  other.directInput = reinterpret_cast<uint64_t>(bufB.data());
                  other.opNum = 77;
                  other.seq = 78;
                  other.spec.preMul = true;
                  Program p1, p2, p3;
                  for (Program* p : {&p1, &p2, &p3}) p->startTask(0, 42);
                  buildProgram(shape, t, &p1);
                  buildProgram(shape, other, &p2);
                  buildProgram(shape, t, &p3);
                  const std::string what = std::string(d.name) + " " + collName(t.kind) + " n=" + std::to_string(n) +
                                           " rank " + std::to_string(r) + " count " + std::to_string(count) +
                                           " protocol " + std::to_string(int(proto)) + " channels " +
                                           std::to_string(channels) + (scratch ? " scratch" : "");
                  ASSERT_FALSE(p1.steps.empty()) << what;
                  ASSERT_EQ(sameProgram(p1, p2), "") << what << ": another task with the same key";
                  ASSERT_EQ(sameProgram(p1, p3), "") << what << ": the same task again";
                  ++built;
                }
      }
  }
  EXPECT_GE(built, 500) << "the sweep must cover the reusable algorithms";
}

// DDA hands out staging rounds as it builds: its second program for the same call is another one,
// which is why it must never be reused.
TEST(ProgramReuse, DdaBuildsAnotherProgramEachTime) {
  ASSERT_FALSE(algorithmDesc(Algo::kDdaFlat).reusable);
  ASSERT_FALSE(algorithmDesc(Algo::kDdaTree).reusable);
  std::vector<float> buf(4096);
  for (Algorithm algo : {Algo::kDdaFlat, Algo::kDdaTree}) {
    sim::DirectSim sim(2);
    Task t;
    t.comm = sim.comm(0);
    t.kind = CollKind::kAllReduce;
    t.algorithm = algo;
    t.dtype = ncclFloat32;
    t.op = ncclSum;
    t.count = buf.size() / 2;
    t.sendbuff = buf.data();
    t.recvbuff = buf.data() + t.count;
    Program p1, p2;
    p1.startTask(0, 42);
    p2.startTask(0, 42);
    buildProgram(commShape(t.comm), t, &p1);
    buildProgram(commShape(t.comm), t, &p2);
    EXPECT_NE(sameProgram(p1, p2), "") << algorithmName(algo);
  }
}

}  // namespace
}  // namespace weft
