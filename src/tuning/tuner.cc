#include "tuning/tuner.h"

#include <algorithm>
#include <atomic>

#include "base/log.h"
#include "collectives/registry.h"

namespace weft {
namespace {

// Ties go to the first protocol in this order: Simple unless LL is really cheaper.
constexpr Protocol kProtoOrder[] = {Protocol::kSimple, Protocol::kLL, Protocol::kLL128};

// Rows of the plugin's cost table (the plugin ABI: NCCL's numbering, then Weft's own), by the
// registry's names. A registered algorithm without a row here is invisible to plugins: giving it
// one extends the ABI (tuning/plugin/tuner_abi.h).
constexpr struct {
  const char* name;
  int row;
} kPluginRows[] = {{"Ring", WEFT_TUNER_ALGO_RING},
                   {"Tree", WEFT_TUNER_ALGO_TREE},
                   {"DDAFlat", WEFT_TUNER_ALGO_DDA_FLAT},
                   {"DDATree", WEFT_TUNER_ALGO_DDA_TREE},
                   {"LowPrecision", WEFT_TUNER_ALGO_LOW_PRECISION}};

int pluginRowOf(Algorithm a) {
  for (const auto& r : kPluginRows)
    if (namesMatch(algorithmName(a), r.name)) return r.row;
  return -1;
}
static_assert(int(Protocol::kLL) == WEFT_TUNER_PROTO_LL && int(Protocol::kLL128) == WEFT_TUNER_PROTO_LL128 &&
              int(Protocol::kSimple) == WEFT_TUNER_PROTO_SIMPLE);

ncclFunc_t ncclFuncOf(CollKind k) {
  switch (k) {
    case CollKind::kBroadcast: return ncclFuncBroadcast;
    case CollKind::kReduce: return ncclFuncReduce;
    // A plugin knows NCCL's functions only: the uneven kinds ask as their even counterparts.
    case CollKind::kAllGather:
    case CollKind::kAllGatherv: return ncclFuncAllGather;
    case CollKind::kReduceScatter:
    case CollKind::kReduceScatterv: return ncclFuncReduceScatter;
    default: return ncclFuncAllReduce;
  }
}

// Warnings about the user's settings that only show when an operation runs: once per process
// each, so a loop of collectives does not flood the log.
std::atomic<bool> gWarnedNoAllowed{false}, gWarnedOverrideAlgo{false}, gWarnedOverrideProto{false};
template <typename... A>
void warnOnce(std::atomic<bool>& flag, const char* fmt, A... args) {
  if (!flag.exchange(true)) WEFT_WARN(fmt, args...);
}

}  // namespace

TunerOptions tunerOptionsFrom(const param::Agreed& agreed, const std::string& pluginSetting) {
  TunerOptions o;
  o.algoText = agreed.algo;
  o.protoText = agreed.proto;
  parseAlgoSetting(agreed.algo, "NCCL_ALGO", &o.filter, &o.warnings);
  parseProtoSetting(agreed.proto, "NCCL_PROTO", &o.filter, &o.warnings);
  parseOverrideAlgo(agreed.overrideAlgo, &o.overrideAlgo, &o.warnings);
  parseOverrideProto(agreed.overrideProto, &o.overrideProto, &o.warnings);
  o.pluginSetting = pluginSetting;
  return o;
}

int Tuner::bucketOf(size_t n) {
  if (n <= 1) return 0;
  int lg = 63 - __builtin_clzll(n);
  size_t base = size_t(1) << lg;
  size_t s = ((n - base) * kBucketsPerOctave + base - 1) / base;  // ceil, 0..4
  if (s == kBucketsPerOctave) {
    ++lg;
    s = 0;
  }
  return std::min(kNumBuckets - 1, lg * kBucketsPerOctave + int(s));
}

size_t Tuner::bucketBytes(int bucket) {
  int lg = bucket / kBucketsPerOctave, s = bucket % kBucketsPerOctave;
  return std::max<size_t>(1, (size_t(1) << lg) * (kBucketsPerOctave + s) / kBucketsPerOctave);
}

namespace {
std::atomic<uint64_t> gTunerSerials{0};
}  // namespace

Tuner::Tuner(const ModelInput& in, const HostConstants& hc, TunerOptions opts)
    : serial_(gTunerSerials.fetch_add(1, std::memory_order_relaxed) + 1), nAlgos_(algorithmCount()), in_(in), hc_(hc),
      opts_(std::move(opts)) {
  for (int a = 0; a < kMaxAlgorithms; ++a) pluginRow_[a] = a < nAlgos_ ? pluginRowOf(Algorithm(a)) : -1;
  table_.assign(size_t(kNumTunedColls) * kNumBuckets * nAlgos_ * kNumProtocols, Entry{-1, 1});
  // Channel counts worth trying: the bounds and the powers of two between them.
  std::vector<int> candidates{std::max(1, in.minChannels)};
  for (int c = 1; c < in.maxChannels; c *= 2)
    if (c > candidates[0]) candidates.push_back(c);
  if (in.maxChannels > candidates[0]) candidates.push_back(in.maxChannels);
  for (int c = 0; c < kNumTunedColls; ++c)
    for (int b = 0; b < kNumBuckets; ++b)
      for (int a = 0; a < nAlgos_; ++a)
        for (int p = 0; p < kNumProtocols; ++p) {
          const Algorithm algo = Algorithm(a);
          // Algorithms that exchange through shared buffers (DDA, low precision) use one channel.
          const bool channelled = algorithmDesc(algo).channelled;
          Entry best{-1, 1};
          for (int ch : candidates) {
            if (!channelled && ch != candidates[0]) break;
            double t = estimateUs(in, hc, tunedCollKind(c), algo, Protocol(p), channelled ? ch : 1, bucketBytes(b));
            // More channels only when clearly cheaper: equal work ties go to fewer.
            if (t >= 0 && (best.costUs < 0 || t < best.costUs * 0.99))
              best = Entry{float(t), uint8_t(channelled ? ch : 1)};
          }
          at(c, b, algo, Protocol(p)) = best;
        }
  if (opts_.pluginSetting != "none") plugin_ = TunerPlugin::open(opts_.pluginSetting, opts_.pluginShape);
  static_assert(kMaxAlgorithms <= 16 && kNumProtocols <= 16, "the memo packs a mask of 16 algorithms");
  memo_ = std::make_unique<std::atomic<uint32_t>[]>(size_t(kNumTunedColls) * kNumBuckets);
  for (size_t i = 0; i < size_t(kNumTunedColls) * kNumBuckets; ++i) memo_[i].store(0, std::memory_order_relaxed);
}

bool Tuner::pick(const float (*costs)[kNumProtocols], int coll, uint32_t supported, bool useFilter,
                 TunerChoice* out) const {
  bool found = false;
  for (int a = 0; a < nAlgos_; ++a) {
    if (!(supported >> a & 1)) continue;
    for (Protocol p : kProtoOrder) {
      float c = costs[a][int(p)];
      if (c < 0 || (useFilter && !opts_.filter.allows(coll, Algorithm(a), p))) continue;
      if (!found || c < out->costUs) {
        *out = TunerChoice{Algorithm(a), p, 1, c};
        found = true;
      }
    }
  }
  return found;
}

TunerChoice Tuner::choose(CollKind coll, size_t nBytes, uint32_t supported, uint64_t rows) const {
  const int ci = tunedCollIndex(coll);
  if (ci < 0) return TunerChoice{};
  const int b = bucketOf(nBytes);
  if (plugin_ != nullptr || rows != 0) return chooseUncached(ci, b, coll, nBytes, supported, rows);
  std::atomic<uint32_t>& memo = memo_[size_t(ci) * kNumBuckets + b];
  const uint32_t m = memo.load(std::memory_order_relaxed);
  if ((m & kMemoValid) != 0 && (m & 0xffffu) == supported) {
    const Algorithm a = Algorithm((m >> 16) & 0xffu);
    const Protocol p = Protocol((m >> 24) & 0xfu);
    const Entry& e = at(ci, b, a, p);
    return TunerChoice{a, p, e.nChannels, e.costUs};
  }
  const TunerChoice c = chooseUncached(ci, b, coll, nBytes, supported, rows);
  // Only answers that the table reproduces are kept (a choice of nothing has no entry).
  const Entry& e = at(ci, b, c.algorithm, c.protocol);
  if (supported <= 0xffffu && e.costUs == c.costUs && e.nChannels == c.nChannels)
    memo.store(kMemoValid | (uint32_t(c.protocol) << 24) | (uint32_t(c.algorithm) << 16) | supported,
               std::memory_order_relaxed);
  return c;
}

TunerChoice Tuner::chooseUncached(int ci, int b, CollKind coll, size_t nBytes, uint32_t supported,
                                  uint64_t rows) const {
  TunerChoice choice;
  float costs[kMaxAlgorithms][kNumProtocols];
  for (int a = 0; a < nAlgos_; ++a)
    for (int p = 0; p < kNumProtocols; ++p) {
      bool usable = (supported >> a & 1) && opts_.filter.allows(ci, Algorithm(a), Protocol(p)) &&
                    (rows == 0 || (rows >> (a * kNumProtocols + p) & 1));
      costs[a][p] = usable ? at(ci, b, Algorithm(a), Protocol(p)).costUs : -1.0f;
    }
  int pluginChannels = 0;
  if (plugin_) {
    // The plugin sees the usable entries in NCCL's layout; entries Weft cannot run stay out of
    // reach whatever it writes there.
    float table[WEFT_TUNER_NUM_ALGOS][WEFT_TUNER_NUM_PROTOS];
    float* rows[WEFT_TUNER_NUM_ALGOS];
    for (int r = 0; r < WEFT_TUNER_NUM_ALGOS; ++r) {
      rows[r] = table[r];
      for (int p = 0; p < WEFT_TUNER_NUM_PROTOS; ++p) table[r][p] = WEFT_TUNER_IGNORE;
    }
    for (int a = 0; a < nAlgos_; ++a)
      if (pluginRow_[a] >= 0)
        for (int p = 0; p < kNumProtocols; ++p) table[pluginRow_[a]][p] = costs[a][p];
    if (plugin_->getCollInfo(ncclFuncOf(coll), nBytes, 1, rows, WEFT_TUNER_NUM_ALGOS, WEFT_TUNER_NUM_PROTOS,
                             &pluginChannels)) {
      for (int a = 0; a < nAlgos_; ++a)
        for (int p = 0; p < kNumProtocols; ++p)
          if (costs[a][p] >= 0 && pluginRow_[a] >= 0)
            costs[a][p] = table[pluginRow_[a]][p] < 0 ? -1.0f : table[pluginRow_[a]][p];
    } else {
      pluginChannels = 0;
    }
  }
  if (!pick(costs, ci, supported, false, &choice)) {
    // Nothing allowed can run this operation (e.g. NCCL_ALGO names only algorithms that cannot):
    // NCCL would fail it; Weft says so once and runs the model's choice.
    warnOnce(gWarnedNoAllowed,
             "NCCL_ALGO=\"%s\" / NCCL_PROTO=\"%s\" leave no algorithm that can run %s of %zu bytes; "
             "using the tuner's choice",
             opts_.algoText.c_str(), opts_.protoText.c_str(), collName(coll), nBytes);
    float raw[kMaxAlgorithms][kNumProtocols];
    for (int a = 0; a < nAlgos_; ++a)
      for (int p = 0; p < kNumProtocols; ++p) raw[a][p] = at(ci, b, Algorithm(a), Protocol(p)).costUs;
    if (!pick(raw, ci, supported, false, &choice)) return TunerChoice{};
  }
  // RCCL_OVERRIDE_ALGO / _PROTO bypass the model where the forced choice can run.
  if (opts_.overrideAlgo >= 0 && Algorithm(opts_.overrideAlgo) != choice.algorithm) {
    Algorithm forced = Algorithm(opts_.overrideAlgo);
    Protocol proto = choice.protocol;
    if (at(ci, b, forced, proto).costUs < 0)
      for (Protocol p : kProtoOrder)
        if (at(ci, b, forced, p).costUs >= 0) {
          proto = p;
          break;
        }
    if ((supported >> int(forced) & 1) && at(ci, b, forced, proto).costUs >= 0) {
      choice.algorithm = forced;
      choice.protocol = proto;
    } else {
      warnOnce(gWarnedOverrideAlgo, "RCCL_OVERRIDE_ALGO=%s cannot run %s of %zu bytes here; using %s",
               algorithmName(forced), collName(coll), nBytes, algorithmName(choice.algorithm));
    }
  }
  if (opts_.overrideProto >= 0 && Protocol(opts_.overrideProto) != choice.protocol) {
    Protocol forced = Protocol(opts_.overrideProto);
    if (at(ci, b, choice.algorithm, forced).costUs >= 0)
      choice.protocol = forced;
    else
      warnOnce(gWarnedOverrideProto, "RCCL_OVERRIDE_PROTO=%s does not apply to %s %s of %zu bytes; using %s",
               protocolName(forced), algorithmName(choice.algorithm), collName(coll), nBytes,
               protocolName(choice.protocol));
  }
  const Entry& e = at(ci, b, choice.algorithm, choice.protocol);
  choice.costUs = e.costUs;
  choice.nChannels = pluginChannels > 0 ? std::clamp(pluginChannels, 1, std::max(1, in_.maxChannels)) : e.nChannels;
  return choice;
}

}  // namespace weft
