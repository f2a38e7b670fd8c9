// DDA and low-precision Programs, run by the direct-lane simulator (direct_sim.h) with a small
// staging area so that messages take several rounds: results against a rank-order reference, the
// same bits on every rank, and consecutive operations that reuse the staging halves.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "algorithm_names.h"
#include "base/params.h"
#include "direct_sim.h"

namespace weft {
namespace {

// The bits of a float: results must match bit for bit (NaN payloads and the sign of zero included).
uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }

class DdaPrograms : public ::testing::Test {
 protected:
  // 64 KiB of staging: 8192 float32 per round, fewer per block for ReduceScatter and AlltoAll.
  void SetUp() override {
    setenv("RCCL_DDA_SENDBUF_BYTES", "65536", 1);
    param::reloadForTesting();
  }
  void TearDown() override {
    unsetenv("RCCL_DDA_SENDBUF_BYTES");
    param::reloadForTesting();
  }
};

Task makeTask(CollKind kind, Algorithm algo, ncclDataType_t dt, ncclRedOp_t op, size_t count, int nranks,
              const void* send, void* recv) {
  Task t;
  t.kind = kind;
  t.algorithm = algo;
  t.dtype = dt;
  t.op = op;
  t.count = count;
  t.sendbuff = send;
  t.recvbuff = recv;
  makeReduceSpec(dt, op, nranks, &t.spec);
  return t;
}

// AllReduce of float32 (sum) and int32 (avg: a post-divide), twice in a row per case so the second
// operation starts on the other staging half; flat and tree must both equal the rank-order fold.
TEST_F(DdaPrograms, AllReduceMatchesRankOrderFold) {
  for (Algorithm algo : {Algo::kDdaFlat, Algo::kDdaTree})
    for (int n : {2, 3, 5, 16})
      for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(8191), size_t(20011)}) {
        sim::DirectSim sim(n);
        std::vector<std::vector<float>> in(n), out(n), out2(n);
        std::vector<std::vector<int32_t>> iin(n), iout(n);
        std::mt19937 rng(static_cast<uint32_t>(n * 131 + count));
        std::normal_distribution<float> normal;
        for (int r = 0; r < n; ++r) {
          in[r].resize(count);
          iin[r].resize(count);
          for (size_t i = 0; i < count; ++i) {
            in[r][i] = normal(rng);
            iin[r][i] = static_cast<int32_t>(rng() % 2001) - 1000;
          }
          out[r].assign(count, -1);
          out2[r].assign(count, -1);
          iout[r].assign(count, -1);
        }
        for (int r = 0; r < n; ++r) {
          sim.add(r, makeTask(CollKind::kAllReduce, algo, ncclFloat32, ncclSum, count, n, in[r].data(), out[r].data()));
          sim.add(r, makeTask(CollKind::kAllReduce, algo, ncclInt32, ncclAvg, count, n, iin[r].data(), iout[r].data()));
          sim.add(r,
                  makeTask(CollKind::kAllReduce, algo, ncclFloat32, ncclSum, count, n, in[r].data(), out2[r].data()));
        }
        ASSERT_EQ(sim.run(static_cast<uint32_t>(count + n)), "") << algorithmName(algo) << " n=" << n;
        for (size_t i = 0; i < count; ++i) {
          float f = in[0][i];
          int64_t s = iin[0][i];
          for (int r = 1; r < n; ++r) {
            f += in[r][i];
            s += iin[r][i];
          }
          for (int r = 0; r < n; ++r) {
            ASSERT_EQ(bits(out[r][i]), bits(f))
                << algorithmName(algo) << " n=" << n << " count=" << count << " i=" << i;
            ASSERT_EQ(bits(out2[r][i]), bits(f)) << "second call, i=" << i;
            ASSERT_EQ(iout[r][i], static_cast<int32_t>(s / n)) << "int avg, i=" << i;
          }
        }
      }
}

// Registered inputs read in place (Task::directInput): ranks that publish stage nothing and their
// peers fold straight from their inputs, beside ranks that stage as before; a rank whose call is
// in place never publishes. Results must be the rank-order fold, bit for bit, in random orders
// where ranks run ahead, over several rounds and several operations in a row.
TEST_F(DdaPrograms, AllReduceReadsPublishedInputsInPlace) {
  for (Algorithm algo : {Algo::kDdaFlat, Algo::kDdaTree})
    for (int n : {2, 3, 5})
      for (size_t count : {size_t(1), size_t(8191), size_t(20011)})
        for (int pattern = 0; pattern < 3; ++pattern) {  // every rank publishes, even ranks, none
          auto publishes = [&](int r) { return pattern == 0 || (pattern == 1 && r % 2 == 0); };
          sim::DirectSim sim(n);
          std::vector<std::vector<float>> in(n), out(n), inPlace(n);
          std::mt19937 rng(static_cast<uint32_t>(n * 7 + count + pattern));
          std::normal_distribution<float> normal;
          for (int r = 0; r < n; ++r) {
            in[r].resize(count);
            for (float& f : in[r]) f = normal(rng);
            out[r].assign(count, -1);
            inPlace[r] = in[r];
          }
          for (int r = 0; r < n; ++r) {
            Task t = makeTask(CollKind::kAllReduce, algo, ncclFloat32, ncclSum, count, n, in[r].data(), out[r].data());
            t.directInput = publishes(r) ? reinterpret_cast<uint64_t>(t.sendbuff) : 0;
            // Program structure (the closing barrier) must not depend on who publishes.
            Program prog;
            prog.startTask(0, 0);
            t.comm = sim.comm(r);
            buildProgram(commShape(t.comm), t, &prog);
            // Flat AllReduce publishes from 8 KiB (below, its closing barrier costs more than the
            // copy it saves); the tree at every size.
            const bool expectPublish = publishes(r) && (algo == Algo::kDdaTree || count * sizeof(float) >= 8192);
            bool stages = false;
            for (const Step& st : prog.steps) stages |= st.op == StepOp::kDirectStage && (st.flags & kStepPre);
            ASSERT_EQ(stages, !expectPublish) << algorithmName(algo) << " rank " << r << " count " << count;
            sim.add(r, t);
            // In place: the rank stages although its buffer is registered, since its fold
            // overwrites what peers read.
            Task ip = makeTask(CollKind::kAllReduce, algo, ncclFloat32, ncclSum, count, n, inPlace[r].data(),
                               inPlace[r].data());
            ip.directInput = publishes(r) ? reinterpret_cast<uint64_t>(ip.sendbuff) : 0;
            sim.add(r, ip);
            sim.add(r, t);
          }
          ASSERT_EQ(sim.run(static_cast<uint32_t>(count + n + pattern)), "") << algorithmName(algo) << " n=" << n;
          for (size_t i = 0; i < count; ++i) {
            float f = in[0][i];
            for (int r = 1; r < n; ++r) f += in[r][i];
            for (int r = 0; r < n; ++r) {
              ASSERT_EQ(bits(out[r][i]), bits(f)) << algorithmName(algo) << " n=" << n << " count=" << count
                                                  << " pattern " << pattern << " rank " << r << " i=" << i;
              ASSERT_EQ(bits(inPlace[r][i]), bits(f)) << "in place, rank " << r << " i=" << i;
            }
          }
        }
}

// AllGather, ReduceScatter (sum) and AlltoAll, with counts that need several rounds.
TEST_F(DdaPrograms, GatherScatterAlltoAll) {
  for (int n : {2, 3, 7})
    for (size_t count : {size_t(1), size_t(1000), size_t(5003)}) {
      sim::DirectSim sim(n);
      std::vector<std::vector<double>> in(n), ag(n), rs(n), a2a(n);
      for (int r = 0; r < n; ++r) {
        in[r].resize(n * count);
        for (size_t i = 0; i < in[r].size(); ++i) in[r][i] = r * 1e6 + double(i);
        ag[r].assign(n * count, -1);
        rs[r].assign(count, -1);
        a2a[r].assign(n * count, -1);
      }
      for (int r = 0; r < n; ++r) {
        sim.add(r, makeTask(CollKind::kAllGather, Algo::kDdaFlat, ncclFloat64, ncclSum, count, n, in[r].data(),
                            ag[r].data()));
        sim.add(r, makeTask(CollKind::kReduceScatter, Algo::kDdaFlat, ncclFloat64, ncclSum, count, n, in[r].data(),
                            rs[r].data()));
        sim.add(r, makeTask(CollKind::kAlltoAll, Algo::kDdaFlat, ncclFloat64, ncclSum, count, n, in[r].data(),
                            a2a[r].data()));
      }
      ASSERT_EQ(sim.run(static_cast<uint32_t>(count * 3 + n)), "") << "n=" << n;
      for (int r = 0; r < n; ++r)
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < count; ++i) {
            ASSERT_EQ(ag[r][q * count + i], in[q][i]) << "AllGather n=" << n << " rank " << r;
            ASSERT_EQ(a2a[r][q * count + i], in[q][r * count + i]) << "AlltoAll n=" << n << " rank " << r;
            if (q == 0) {
              double s = 0;
              for (int p = 0; p < n; ++p) s += in[p][r * count + i];
              ASSERT_EQ(rs[r][i], s) << "ReduceScatter n=" << n << " rank " << r << " i=" << i;
            }
          }
    }
}

// Low-precision AllReduce: every rank the same bits, within FP8's error of the exact sum, with
// tails that are not whole blocks or whole slices, and several rounds.
TEST_F(DdaPrograms, LowPrecisionAllReduceIsIdenticalOnEveryRank) {
  for (int n : {2, 3, 8})
    for (size_t count : {size_t(1), size_t(255), size_t(257), size_t(40009)}) {
      sim::DirectSim sim(n);
      std::vector<std::vector<float>> in(n), out(n);
      std::mt19937 rng(static_cast<uint32_t>(count));
      std::normal_distribution<float> normal;
      for (int r = 0; r < n; ++r) {
        in[r].resize(count);
        for (float& f : in[r]) f = normal(rng);
        out[r].assign(count, -1);
      }
      for (int r = 0; r < n; ++r)
        sim.add(r, makeTask(CollKind::kAllReduce, Algo::kLowPrecision, ncclFloat32, ncclSum, count, n, in[r].data(),
                            out[r].data()));
      ASSERT_EQ(sim.run(static_cast<uint32_t>(count)), "");
      for (size_t i = 0; i < count; ++i) {
        double exact = 0, mag = 0;
        for (int r = 0; r < n; ++r) {
          exact += in[r][i];
          mag += std::fabs(in[r][i]);
        }
        for (int r = 1; r < n; ++r) ASSERT_EQ(bits(out[r][i]), bits(out[0][i])) << "n=" << n << " i=" << i;
        // Two FP8 roundings (inputs, then the sum), each 2^-4 relative plus a subnormal step.
        ASSERT_LE(std::fabs(out[0][i] - exact), 0.0625 * (mag + std::fabs(exact)) + 0.01 * n) << "i=" << i;
      }
    }
}

}  // namespace
}  // namespace weft
