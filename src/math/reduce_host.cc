// Host side of the single-source primitives: turns a ReduceSpec and the reduceCopy flags into one
// call of a loop specialised for its datatype, operation and variant (reduce_kernel.h). The choice
// is made once per call through a table of function pointers, so the element loop itself is the
// same branch-free code the GPU kernels compile.
#include "math/reduce_host.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "math/complex_types.h"
#include "math/lowp_types.h"
#include "math/reduce_kernel.h"
#include "math/reduce_ops.h"

namespace weft {
namespace {

// The loop table's rows: NCCL's datatypes at their own values, then Weft's complex types (whose
// enum values, 64 and 65, leave a gap that a table indexed by value would waste).
constexpr int kSlotComplex64 = ncclNumTypes;
constexpr int kSlotComplex128 = ncclNumTypes + 1;
constexpr int kNumTypes = ncclNumTypes + 2;

// The row of dtype, or -1 for an invalid dtype.
int slotOf(ncclDataType_t dtype) {
  const int v = static_cast<int>(dtype);
  if (v >= 0 && v < ncclNumTypes) return v;
  if (dtype == weftComplex64) return kSlotComplex64;
  if (dtype == weftComplex128) return kSlotComplex128;
  return -1;
}

// The C++ element type of each row.
template <int kSlot>
struct ElementOf;
template <>
struct ElementOf<ncclInt8> {
  using type = int8_t;
};
template <>
struct ElementOf<ncclUint8> {
  using type = uint8_t;
};
template <>
struct ElementOf<ncclInt32> {
  using type = int32_t;
};
template <>
struct ElementOf<ncclUint32> {
  using type = uint32_t;
};
template <>
struct ElementOf<ncclInt64> {
  using type = int64_t;
};
template <>
struct ElementOf<ncclUint64> {
  using type = uint64_t;
};
template <>
struct ElementOf<ncclFloat16> {
  using type = Float16;
};
template <>
struct ElementOf<ncclFloat32> {
  using type = float;
};
template <>
struct ElementOf<ncclFloat64> {
  using type = double;
};
template <>
struct ElementOf<ncclBfloat16> {
  using type = BFloat16;
};
template <>
struct ElementOf<ncclFloat8e4m3> {
  using type = Float8E4M3;
};
template <>
struct ElementOf<ncclFloat8e5m2> {
  using type = Float8E5M2;
};
template <>
struct ElementOf<kSlotComplex64> {
  using type = Complex<float>;
};
template <>
struct ElementOf<kSlotComplex128> {
  using type = Complex<double>;
};

constexpr int kNumBaseOps = 4;
constexpr unsigned kNumVariants = 32;  // every combination of the ReduceVariant bits

// A value of type T from the low sizeof(T) bytes' worth of bits of the spec's scalar word (the
// word is a number, not memory, so this reads the same on either byte order). A 16-byte scalar
// (complex128) is the two words in memory order, as it was captured from the user's memory.
template <typename T>
T scalarFromBits(const uint64_t* words) {
  const uint64_t bits = words[0];
  if constexpr (sizeof(T) == 16) {
    T v;
    memcpy(&v, words, 16);
    return v;
  } else if constexpr (sizeof(T) == 1) {
    const uint8_t b = static_cast<uint8_t>(bits);
    T v;
    memcpy(&v, &b, 1);
    return v;
  } else if constexpr (sizeof(T) == 2) {
    const uint16_t b = static_cast<uint16_t>(bits);
    T v;
    memcpy(&v, &b, 2);
    return v;
  } else if constexpr (sizeof(T) == 4) {
    const uint32_t b = static_cast<uint32_t>(bits);
    T v;
    memcpy(&v, &b, 4);
    return v;
  } else {
    static_assert(sizeof(T) == 8);
    T v;
    memcpy(&v, &bits, 8);
    return v;
  }
}

template <typename T>
uint64_t bitsOfScalar(T v) {
  if constexpr (sizeof(T) == 1) {
    uint8_t b;
    memcpy(&b, &v, 1);
    return b;
  } else if constexpr (sizeof(T) == 2) {
    uint16_t b;
    memcpy(&b, &v, 2);
    return b;
  } else if constexpr (sizeof(T) == 4) {
    uint32_t b;
    memcpy(&b, &v, 4);
    return b;
  } else {
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
  }
}

// preBits: the spec's scalar words (preMulScalar, preMulScalarHi).
using LoopFn = void (*)(void* dst0, void* dst1, const void* partial, const void* local, const uint64_t* preBits,
                        int divisor, size_t count);

// The loops, compiled once for the baseline instruction set every x86-64 (or other) machine has,
// and on x86-64 once more for AVX2, picked at run time. The distributed library cannot assume AVX2,
// but where it exists the wider registers double the throughput of the narrow formats, triple
// that of float Max/Min, and take float/double sums from about 88 to about 113 GB/s with
// L2-resident buffers (the speed of memcpy there). Both builds give the same bits: AVX2 does not
// include FMA, and nothing else changes the arithmetic (the unit tests run both).
struct BaselineIsa {
  template <typename T, template <typename> class Op, unsigned kVariant>
  static void run(void* dst0, void* dst1, const void* partial, const void* local, const uint64_t* preBits, int divisor,
                  size_t count) {
    using M = MemoryType<T>;
    reduceCopyRange<T, Op<T>, kVariant>(static_cast<M*>(dst0), static_cast<M*>(dst1), static_cast<const M*>(partial),
                                        static_cast<const M*>(local), scalarFromBits<T>(preBits), divisor, 0, count, 1);
  }
};

#if defined(__x86_64__) && defined(__GNUC__)
#define WEFT_HAVE_AVX2_LOOPS 1
struct Avx2Isa {
  template <typename T, template <typename> class Op, unsigned kVariant>
  __attribute__((target("avx2"))) static void run(void* dst0, void* dst1, const void* partial, const void* local,
                                                  const uint64_t* preBits, int divisor, size_t count) {
    using M = MemoryType<T>;
    reduceCopyRange<T, Op<T>, kVariant>(static_cast<M*>(dst0), static_cast<M*>(dst1), static_cast<const M*>(partial),
                                        static_cast<const M*>(local), scalarFromBits<T>(preBits), divisor, 0, count, 1);
  }
};
#else
#define WEFT_HAVE_AVX2_LOOPS 0
#endif

// Which loops exist. reduceCopy hands a single source over as `local` (pre-multiplied only when it
// really is the rank's own input) and sends plain copies to memcpy. A single-source loop applies
// no operation, so one set (compiled with FuncSum) serves every op. Two-source loops exist for
// every op, and fused with the pre-multiply or the post-divide for kSum, the only op Weft builds
// them with (ncclAvg, ncclPreMulSum). Any other combination is composed from these loops in
// blocks (reduceComposed), with the same bits as a fused loop would give. That is 18 loops per
// datatype instead of the 56 every combination would take, and this file's code and build time
// shrink in proportion.
template <int kOp, unsigned kVariant>
constexpr bool loopExists() {
  constexpr bool local = (kVariant & kVarLocal) != 0;
  constexpr bool partial = (kVariant & kVarPartial) != 0;
  constexpr bool pre = (kVariant & kVarPre) != 0;
  constexpr bool post = (kVariant & kVarPost) != 0;
  if (!local) return false;
  if (!partial) return kOp == static_cast<int>(BaseOp::kSum) && (pre || post);
  if (!pre && !post) return true;
  return kOp == static_cast<int>(BaseOp::kSum) && !(pre && post);
}

template <int kOp>
struct OpOf;
template <>
struct OpOf<static_cast<int>(BaseOp::kSum)> {
  template <typename T>
  using type = FuncSum<T>;
};
template <>
struct OpOf<static_cast<int>(BaseOp::kProd)> {
  template <typename T>
  using type = FuncProd<T>;
};
template <>
struct OpOf<static_cast<int>(BaseOp::kMax)> {
  template <typename T>
  using type = FuncMax<T>;
};
template <>
struct OpOf<static_cast<int>(BaseOp::kMin)> {
  template <typename T>
  using type = FuncMin<T>;
};

using VariantRow = std::array<LoopFn, kNumVariants>;
using OpRows = std::array<VariantRow, kNumBaseOps>;
using LoopTable = std::array<OpRows, kNumTypes>;

// Max and Min are not defined on complex numbers (no order): no loop, and reduceCopy refuses them.
template <typename T, int kOp>
constexpr bool opExistsFor() {
  return !kIsComplex<T> || (kOp != static_cast<int>(BaseOp::kMax) && kOp != static_cast<int>(BaseOp::kMin));
}

template <typename Isa, typename T, int kOp, unsigned kVariant>
constexpr LoopFn loopFor() {
  if constexpr (opExistsFor<T, kOp>() && loopExists<kOp, kVariant>())
    return &Isa::template run<T, OpOf<kOp>::template type, kVariant>;
  else
    return nullptr;
}

template <typename Isa, typename T, int kOp, unsigned... kVariants>
constexpr VariantRow variantRow(std::integer_sequence<unsigned, kVariants...>) {
  return {{loopFor<Isa, T, kOp, kVariants>()...}};
}

template <typename Isa, typename T, int... kOps>
constexpr OpRows opRows(std::integer_sequence<int, kOps...>) {
  return {{variantRow<Isa, T, kOps>(std::make_integer_sequence<unsigned, kNumVariants>())...}};
}

template <typename Isa, int... kDtypes>
constexpr LoopTable loopTable(std::integer_sequence<int, kDtypes...>) {
  return {{opRows<Isa, typename ElementOf<kDtypes>::type>(std::make_integer_sequence<int, kNumBaseOps>())...}};
}

constexpr LoopTable kBaselineLoops = loopTable<BaselineIsa>(std::make_integer_sequence<int, kNumTypes>());
#if WEFT_HAVE_AVX2_LOOPS
constexpr LoopTable kAvx2Loops = loopTable<Avx2Isa>(std::make_integer_sequence<int, kNumTypes>());
#endif

std::atomic<bool> gForceBaseline{false};

const LoopTable& loops() {
#if WEFT_HAVE_AVX2_LOOPS
  static const LoopTable* const best = [] {
    __builtin_cpu_init();  // may run before libgcc's own initialiser (static constructors)
    return __builtin_cpu_supports("avx2") ? &kAvx2Loops : &kBaselineLoops;
  }();
  return gForceBaseline.load(std::memory_order_relaxed) ? kBaselineLoops : *best;
#else
  return kBaselineLoops;
#endif
}

}  // namespace

// glibc copies with `rep movsb`, which writes whole lines without reading them first, only below a
// size (rep_movsb_stop_threshold: the L2 size on AMD, 1 MiB on an EPYC VM); above it, a vector loop
// whose stores each fetch their line. When a peer on another core holds those lines (it read this
// staging area in an earlier round), every fetch waits on that core: a 2-rank 1 MiB DDA AllReduce
// ran 2.5x slower than one of 896 KiB. Copies in pieces below every such threshold keep the fast
// path whatever the size.
constexpr size_t kCopyPieceBytes = 256 * 1024;

void copyBytes(void* dst, const void* src, size_t bytes) {
  if (dst == src) return;  // exact aliasing is allowed and means nothing to do
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  for (; bytes > kCopyPieceBytes; bytes -= kCopyPieceBytes, d += kCopyPieceBytes, s += kCopyPieceBytes)
    memcpy(d, s, kCopyPieceBytes);
  memcpy(d, s, bytes);
}

namespace {

// Below this a piece is not worth streaming: its lines may well be read again soon.
constexpr size_t kStreamMinBytes = 4096;

// Non-temporal copy without the fence. A plain store to a line that is not cached first reads the
// line from memory (to merge the other bytes of it); a non-temporal one writes whole lines from a
// write-combining buffer and reads nothing, which for outputs larger than the caches saves a third
// to a half of the memory traffic (measured on a 2-core Xeon VM: copying a cache-resident 1 MiB
// into a 64 MiB output, 8.1 -> 18.6 GB/s; a two-source float sum into it, 5.4 -> 7.7 GB/s). SSE2
// is part of x86-64, so no run-time dispatch is needed.
void streamBytes(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (head > bytes) head = bytes;
  memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  memcpy(d, s, bytes);
#else
  memcpy(dst, src, bytes);
#endif
}

// Orders the non-temporal stores before any later store (they are weakly ordered on x86).
void fenceStreams() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

// Two sources with a pre-multiply and/or post-divide on an op that has no fused loop for it (no
// Weft path builds such a spec today, but ReduceSpec allows it). Runs the unfused loops over
// blocks small enough to stay in L1: pre-multiply `local` into a scratch block, combine, then
// post-divide in place and copy to dst1. Each element goes through exactly the operations, in the
// order, that a fused loop applies, so the bits are the same; and since a block is fully read
// before it is written, exact aliasing between destinations and sources still works.
void reduceComposed(const OpRows& rows, unsigned op, size_t elemSize, void* dst0, void* dst1, const void* partial,
                    const void* local, size_t count, bool pre, bool post, const uint64_t* preBits, int divisor) {
  constexpr size_t kScratchBytes = 16384;
  alignas(64) unsigned char scratch[kScratchBytes];
  const size_t block = kScratchBytes / elemSize;
  const unsigned sum = static_cast<unsigned>(BaseOp::kSum);
  for (size_t done = 0; done < count; done += block) {
    const size_t n = count - done < block ? count - done : block;
    const size_t offset = done * elemSize;
    unsigned char* d0 = static_cast<unsigned char*>(dst0) + offset;
    const void* src = static_cast<const unsigned char*>(local) + offset;
    if (pre) {
      rows[sum][kVarLocal | kVarPre](scratch, nullptr, nullptr, src, preBits, divisor, n);
      src = scratch;
    }
    rows[op][kVarLocal | kVarPartial](d0, nullptr, static_cast<const unsigned char*>(partial) + offset, src, preBits,
                                      divisor, n);
    if (post) rows[sum][kVarLocal | kVarPost](d0, nullptr, nullptr, d0, preBits, divisor, n);
    if (dst1 != nullptr) copyBytes(static_cast<unsigned char*>(dst1) + offset, d0, n * elemSize);
  }
}

}  // namespace

const char* dataTypeName(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8: return "int8";
    case ncclUint8: return "uint8";
    case ncclInt32: return "int32";
    case ncclUint32: return "uint32";
    case ncclInt64: return "int64";
    case ncclUint64: return "uint64";
    case ncclFloat16: return "float16";
    case ncclFloat32: return "float32";
    case ncclFloat64: return "float64";
    case ncclBfloat16: return "bfloat16";
    case ncclFloat8e4m3: return "float8e4m3";
    case ncclFloat8e5m2: return "float8e5m2";
    case weftComplex64: return "complex64";
    case weftComplex128: return "complex128";
    default: return "invalid";
  }
}

bool makeReduceSpec(ncclDataType_t dtype, ncclRedOp_t op, int nranks, ReduceSpec* out) {
  if (out == nullptr || slotOf(dtype) < 0 || nranks < 1 || !opDefinedFor(op, dtype)) return false;
  ReduceSpec spec;
  spec.dtype = dtype;
  switch (op) {
    case ncclSum: spec.op = BaseOp::kSum; break;
    case ncclProd: spec.op = BaseOp::kProd; break;
    case ncclMax: spec.op = BaseOp::kMax; break;
    case ncclMin: spec.op = BaseOp::kMin; break;
    case ncclAvg: {
      spec.op = BaseOp::kSum;
      // Averaging over one rank is the identity; leaving pre/post off keeps it a plain copy.
      if (nranks == 1) break;
      // 1/nranks rounded to double and then to the datatype. For float the double rounding
      // cannot differ from a direct one (53 >= 2*24 + 2 bits); for the narrow formats it is the
      // value every rank computes the same way. The narrowest format rounds it to zero from
      // nranks = 1024 on (e4m3's smallest value is 2^-9), as averaging in that format must.
      const double inv = 1.0 / static_cast<double>(nranks);
      switch (dtype) {
        case ncclFloat16: spec.preMulScalar = bitsOfScalar(Float16(static_cast<float>(inv))); break;
        case ncclBfloat16: spec.preMulScalar = bitsOfScalar(BFloat16(static_cast<float>(inv))); break;
        case ncclFloat8e4m3: spec.preMulScalar = bitsOfScalar(Float8E4M3(static_cast<float>(inv))); break;
        case ncclFloat8e5m2: spec.preMulScalar = bitsOfScalar(Float8E5M2(static_cast<float>(inv))); break;
        case ncclFloat32: spec.preMulScalar = bitsOfScalar(static_cast<float>(inv)); break;
        case ncclFloat64: spec.preMulScalar = bitsOfScalar(inv); break;
        default:
          // Integers divide the wrapped sum, truncating toward zero; complex types divide each
          // part of the sum (reduce_ops.h says why they do not pre-multiply).
          spec.postDiv = true;
          spec.divisor = nranks;
          break;
      }
      spec.preMul = !spec.postDiv;
      break;
    }
    default: return false;
  }
  *out = spec;
  return true;
}

namespace {

// A FIFO slot is read by a peer on another core as soon as it is published, so its lines sit in
// that core's cache. A loop that stores into them while it loads the peer's freshly written input
// waits on the other core line by line. memcpy of a block computed beside the slot writes the
// lines without the loads in between, and from 8 KiB on (glibc's threshold with AVX-512) as
// `rep movsb`, which writes whole lines. When the two cores are far apart (another socket, or vCPUs
// the host placed apart: a cache-line handoff of 0.3 us instead of 0.06) the difference is 2x: a
// 2-rank 1 MiB ring AllReduce took 175-200 us with the loop writing both its output and the slot,
// 80-100 us through 16 KiB blocks. Copies of 2 KiB, below `rep movsb`, gained nothing (64 MiB out
// of place: 12 ms, as with the loop; 8 and 16 KiB: 8.5-9.3 ms). Where the cores are close (0.06
// us) both ways run within 5% of each other. Only a second destination is treated so: a slot as
// the first (a ring's reduce-and-send at 3+ ranks) would need a block of its own and one more
// copy, and with 4 ranks on this 2-core machine, where a slot's reader often shares the writer's
// core, that ran 12% slower (median of 12, 1 MiB); its gain across cores cannot be measured here.
constexpr size_t kSlotBlockBytes = 16384;

const unsigned char* elementAt(const void* p, size_t i, size_t elemSize) {
  return p == nullptr ? nullptr : static_cast<const unsigned char*>(p) + i * elemSize;
}

// Block by block: the value goes into dst0 (the task's output), and the copy into the slot reads
// it back from L1. flags: pre/post.
void reduceThroughBlocks(const ReduceSpec& spec, void* dst0, void* dst1, const void* partial, const void* local,
                         size_t count, size_t elemSize, unsigned flags) {
  const size_t per = kSlotBlockBytes / elemSize;
  for (size_t done = 0; done < count; done += per) {
    const size_t n = count - done < per ? count - done : per;
    unsigned char* out0 = static_cast<unsigned char*>(dst0) + done * elemSize;
    reduceCopy(spec, out0, nullptr, elementAt(partial, done, elemSize), elementAt(local, done, elemSize), n, flags);
    memcpy(static_cast<unsigned char*>(dst1) + done * elemSize, out0, n * elemSize);
  }
}

// A streamed output (kStreamDst0): the loops write plain stores, so they run into an L1 block that
// is then streamed out; each piece is read in full before dst0's part of it is written, so exact
// aliasing still works. 2 KiB pieces keep the loads and the streaming stores interleaved: on a
// 2-core EPYC VM a 2-rank 64 MiB out-of-place AllReduce took a median 10.3 ms with 2 KiB against
// 11.5 with 16 KiB (1 KiB: 11.1, the calls' overhead shows), 5 interleaved runs each. A second
// destination (always a slot in the host executor) is copied from the block, 16 KiB at a time, as
// above (2 ranks, 64 MiB out of place, handoff 0.3 us: 16-18 ms with the loop writing the slot
// between the pieces, 9-12 ms this way).
constexpr size_t kStreamPieceBytes = 2048;

void streamThroughBlocks(const ReduceSpec& spec, void* dst0, void* dst1, const void* partial, const void* local,
                         size_t count, size_t elemSize, unsigned flags) {
  alignas(64) unsigned char block[kSlotBlockBytes];
  const size_t per = kSlotBlockBytes / elemSize, perPiece = kStreamPieceBytes / elemSize;
  for (size_t done = 0; done < count; done += per) {
    const size_t n = count - done < per ? count - done : per;
    for (size_t sub = 0; sub < n; sub += perPiece) {
      const size_t m = n - sub < perPiece ? n - sub : perPiece;
      // Without a second destination nothing reads the block again: every piece reuses its start.
      unsigned char* piece = dst1 == nullptr ? block : block + sub * elemSize;
      reduceCopy(spec, piece, nullptr, elementAt(partial, done + sub, elemSize), elementAt(local, done + sub, elemSize),
                 m, flags);
      streamBytes(static_cast<unsigned char*>(dst0) + (done + sub) * elemSize, piece, m * elemSize);
    }
    if (dst1 != nullptr) memcpy(static_cast<unsigned char*>(dst1) + done * elemSize, block, n * elemSize);
  }
  fenceStreams();
}

}  // namespace

void reduceCopy(const ReduceSpec& spec, void* dst0, void* dst1, const void* partial, const void* local, size_t count,
                unsigned flags) {
  const size_t elemSize = dataTypeSize(spec.dtype);
  const unsigned op = static_cast<unsigned>(spec.op);
  const int slot = slotOf(spec.dtype);
  // Callers validate their arguments; an impossible spec (Max/Min on complex included) or a
  // missing source does nothing rather than index past the table or call a loop that is not there.
  const bool unordered = isComplexDataType(spec.dtype) && (spec.op == BaseOp::kMax || spec.op == BaseOp::kMin);
  if (count == 0 || slot < 0 || op >= kNumBaseOps || unordered || (partial == nullptr && local == nullptr)) return;

  const bool pre = local != nullptr && (flags & kApplyPre) != 0 && spec.preMul;
  // Dividing by 1 is the identity; a divisor below 1 is not a rank count and is ignored rather
  // than allowed to trap.
  const bool post = (flags & kApplyPost) != 0 && spec.postDiv && spec.divisor > 1;
  const bool twoSources = partial != nullptr && local != nullptr;

  const bool stream = (flags & kStreamDst0) != 0 && count * elemSize >= kStreamMinBytes;
  if (!twoSources && !pre && !post) {
    const void* src = local != nullptr ? local : partial;
    if (dst1 != nullptr) copyBytes(dst1, src, count * elemSize);  // first: dst0 may alias src
    if (stream)
      copyStreaming(dst0, src, count * elemSize);
    else
      copyBytes(dst0, src, count * elemSize);
    return;
  }
  // Past this point the loops combine (two sources, pre or post).
  const unsigned prePost = flags & (kApplyPre | kApplyPost);
  if (stream) {
    streamThroughBlocks(spec, dst0, dst1, partial, local, count, elemSize, prePost);
    return;
  }
  if (dst1 != nullptr && (flags & kSlotDst1) != 0) {  // see kSlotBlockBytes
    reduceThroughBlocks(spec, dst0, dst1, partial, local, count, elemSize, prePost);
    return;
  }

  unsigned variant = kVarLocal;
  if (twoSources) variant |= kVarPartial;
  if (pre) variant |= kVarPre;
  if (post) variant |= kVarPost;
  if (dst1 != nullptr) variant |= kVarDst1;
  const OpRows& rows = loops()[slot];
  const uint64_t preBits[2] = {spec.preMulScalar, spec.preMulScalarHi};
  const void* single = local != nullptr ? local : partial;
  // Single-source loops apply no operation; they are kept under kSum only.
  const LoopFn fn = rows[twoSources ? op : static_cast<unsigned>(BaseOp::kSum)][variant];
  if (fn != nullptr) {
    fn(dst0, dst1, twoSources ? partial : nullptr, single, preBits, spec.divisor, count);
    return;
  }
  reduceComposed(rows, op, elemSize, dst0, dst1, partial, local, count, pre, post, preBits, spec.divisor);
}

void copyStreaming(void* dst, const void* src, size_t bytes) {
  if (dst == src) return;
  if (bytes < kStreamMinBytes) {
    memcpy(dst, src, bytes);
    return;
  }
  streamBytes(dst, src, bytes);
  fenceStreams();
}

void reduceUseBaselineLoopsForTesting(bool on) { gForceBaseline.store(on, std::memory_order_relaxed); }

}  // namespace weft
