// The per-communicator tuner: the cost table (collective x size bucket x algorithm x protocol,
// each entry with its best channel count), filled at init from the cost model, and the choice
// for one operation: the cheapest entry that NCCL_ALGO / NCCL_PROTO allow and the algorithm can
// run, after the tuner plugin (if any) has seen and edited the costs, then RCCL_OVERRIDE_*.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/params.h"
#include "collectives/model/cost_model.h"
#include "tuning/algo_filter.h"
#include "tuning/plugin/tuner_plugin.h"

namespace weft {

struct TunerOptions {
  std::string algoText, protoText;  // NCCL_ALGO / NCCL_PROTO as agreed, for messages
  AlgoProtoFilter filter;
  int overrideAlgo = -1;               // RCCL_OVERRIDE_ALGO as an Algorithm, -1 = none
  int overrideProto = -1;              // RCCL_OVERRIDE_PROTO as a Protocol, -1 = none
  std::string pluginSetting = "none";  // NCCL_TUNER_PLUGIN ("none": no plugin)
  TunerPluginShape pluginShape;
  std::vector<std::string> warnings;  // from parsing the settings
};

// Parses the agreed NCCL_ALGO, NCCL_PROTO, RCCL_OVERRIDE_ALGO and RCCL_OVERRIDE_PROTO; the plugin
// setting (NCCL_TUNER_PLUGIN) is per rank: a path may differ between hosts, the plugin loaded from
// it must not (tuner_setup.cc checks its name and version across ranks).
TunerOptions tunerOptionsFrom(const param::Agreed& agreed, const std::string& pluginSetting);

struct TunerChoice {
  Algorithm algorithm{};  // the registry's first row (the ring) when nothing was chosen
  Protocol protocol = Protocol::kSimple;
  int nChannels = 1;
  float costUs = -1;  // the model's estimate for the choice (-1: none had a cost)
};

class Tuner {
 public:
  // Sizes from 1 B to 2^kMaxLog2 B in four buckets per power of two; larger sizes use the last.
  static constexpr int kMaxLog2 = 40;
  static constexpr int kBucketsPerOctave = 4;
  static constexpr int kNumBuckets = (kMaxLog2 + 1) * kBucketsPerOctave;

  Tuner(const ModelInput& in, const HostConstants& hc, TunerOptions opts);
  const ModelInput& input() const { return in_; }
  const HostConstants& constants() const { return hc_; }
  const TunerOptions& options() const { return opts_; }
  const TunerPlugin* plugin() const { return plugin_.get(); }
  // Unique in the process, never reused (unlike an address): names this tuner, and with it its
  // communicator, in a thread's memo that may outlive both (select.h's SelectionMemo).
  uint64_t serial() const { return serial_; }

  // `supported` has bit i set when Algorithm(i) may run the operation (select.h's
  // modelCandidates); `rows`, when not 0, narrows the (algorithm, protocol) pairs further (a
  // call's algSelection, tuning/call_selection.h: bit a * kNumProtocols + p). No allocation, a few
  // dozen table reads.
  TunerChoice choose(CollKind coll, size_t nBytes, uint32_t supported, uint64_t rows = 0) const;
  // The table entry (cost -1 = no formula, or an algorithm/protocol the model never chooses).
  float cost(int coll, int bucket, Algorithm a, Protocol p) const { return at(coll, bucket, a, p).costUs; }
  int channels(int coll, int bucket, Algorithm a, Protocol p) const { return at(coll, bucket, a, p).nChannels; }
  static int bucketOf(size_t nBytes);
  static size_t bucketBytes(int bucket);  // the largest size of the bucket, where it was costed

 private:
  struct Entry {
    float costUs;
    uint8_t nChannels;
  };
  const Entry& at(int c, int b, Algorithm a, Protocol p) const {
    return table_[((size_t(c) * kNumBuckets + b) * nAlgos_ + int(a)) * kNumProtocols + int(p)];
  }
  Entry& at(int c, int b, Algorithm a, Protocol p) {
    return table_[((size_t(c) * kNumBuckets + b) * nAlgos_ + int(a)) * kNumProtocols + int(p)];
  }
  bool pick(const float (*costs)[kNumProtocols], int coll, uint32_t supported, bool useFilter, TunerChoice* out) const;
  TunerChoice chooseUncached(int ci, int b, CollKind coll, size_t nBytes, uint32_t supported, uint64_t rows) const;

  // Without a plugin and without a per-call selection, choose() is a pure function of the
  // collective, the size bucket and the supported mask, and it runs on every operation (with the
  // eligibility checks, a third of a 1-rank 8 B AllReduce's CPU time). One word per (collective,
  // bucket) holds the last answer: bit 31 set, the mask in bits 0-15, the algorithm in 16-23 and the
  // protocol in 24-27; cost and channels come from the table. Relaxed atomics: a stale or torn
  // read is impossible (one word) and a lost update only costs a recomputation.
  static constexpr uint32_t kMemoValid = 1u << 31;
  mutable std::unique_ptr<std::atomic<uint32_t>[]> memo_;

  const uint64_t serial_;
  int nAlgos_;                     // the registry's rows
  int pluginRow_[kMaxAlgorithms];  // each row's row in a plugin's cost table (-1: plugins do not see it)
  ModelInput in_;
  HostConstants hc_;
  TunerOptions opts_;
  std::vector<Entry> table_;
  std::unique_ptr<TunerPlugin> plugin_;
};

}  // namespace weft
