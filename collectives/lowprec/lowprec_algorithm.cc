// Low precision's registry entry. It changes results, so it runs only where the user enabled it
// (RCCL_LOW_PRECISION_ENABLE*, from WEFT_LOW_PRECISION_MIN_BYTES up), never on the model's say-so;
// its cost formula is there for NCCL_DEBUG_SUBSYS=TUNING and weft-info to compare against.
#include "collectives/dda/dda.h"
#include "collectives/lowprec/lowprec.h"

namespace weft {
namespace {

// The types the FP8 steps convert from and to (the host executor's lowpSupportsType agrees).
bool convertible(ncclDataType_t dt) { return dt == ncclFloat32 || dt == ncclBfloat16 || dt == ncclFloat16; }

int64_t switchFor(const param::Agreed& a, CollKind k) {
  switch (k) {
    case CollKind::kAllReduce: return a.lowPrecisionAllReduce;
    case CollKind::kAllGather: return a.lowPrecisionAllGather;
    case CollKind::kReduceScatter: return a.lowPrecisionReduceScatter;
    case CollKind::kAlltoAll: return a.lowPrecisionAllToAll;
    default: return 0;
  }
}

Eligibility eligible(const CommShape& sh, const Task& t) {
  // Staged like DDA; sum only: avg, premulsum, prod, min and max keep their exact algorithms.
  const bool reduces = t.kind == CollKind::kAllReduce || t.kind == CollKind::kReduceScatter;
  if (!directLaneUsable(sh) || !convertible(t.dtype) || (reduces && t.op != ncclSum)) return Eligibility::kNo;
  const param::Agreed& a = *sh.agreed;
  const int64_t on = switchFor(a, t.kind);  // < 0: RCCL_LOW_PRECISION_ENABLE decides
  if (on == 0 || (on < 0 && !a.lowPrecision)) return Eligibility::kNo;
  // RCCL's measure: the AllReduce buffer, or all ranks' data for the others.
  size_t bytes = t.count * dataTypeSize(t.dtype);
  if (t.kind != CollKind::kAllReduce) bytes *= size_t(sh.nranks);
  return bytes >= size_t(a.lowPrecisionMinBytes) ? Eligibility::kForced : Eligibility::kNo;
}

// FP8 payload per float input byte, plus one 4-byte scale per 32-element block.
constexpr double kLowpBytesRatio = 0.25 + 4.0 / (32.0 * 4.0);

// Quantize the input to FP8 with block scales, reduce-scatter and all-gather of the quantized
// bytes between all pairs, dequantize and reduce the received slices, requantize the own slice,
// dequantize the gathered result. AllReduce only; no protocols.
double cost(const ModelInput& in, const Path& p, CollKind coll, Protocol proto, int, double S) {
  if (coll != CollKind::kAllReduce || proto != Protocol::kSimple) return -1;
  const double n = in.nranks;
  const double q = S * kLowpBytesRatio;
  double convert = (S + S / n + S) * p.reducePerB;     // quantize, requantize slice, dequantize
  double exchange = 2 * (n - 1) / n * q * p.copyPerB;  // both phases
  double reduce = (n - 1) / n * S * p.reducePerB;
  double latency = 2 * (p.latUs + (n - 1) * p.stepUs);  // two all-pairs phases
  return (convert + exchange + reduce) * p.workScale + latency;
}

}  // namespace

const AlgorithmDesc kLowPrecisionAlgorithm = {
    "LowPrecision",
    "lowp,fp8",
    "FP8 e4m3 with a scale per 256 elements through the DDA staging areas; reductions in float32",
    kindBit(CollKind::kAllReduce) | kindBit(CollKind::kAllGather) | kindBit(CollKind::kReduceScatter) |
        kindBit(CollKind::kAlltoAll),
    "every rank on one host (shared memory in host mode, P2P on GPUs); float32, bfloat16 or float16; sum; where "
    "RCCL_LOW_PRECISION_ENABLE* asks, from WEFT_LOW_PRECISION_MIN_BYTES",
    /*lossy=*/true,
    /*channelled=*/false,
    /*reusable=*/false,
    eligible,
    nullptr,  // the staging areas, not the scratch
    buildLowPrecisionProgram,
    cost,
};

}  // namespace weft
