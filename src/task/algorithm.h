// The algorithms and protocols a collective can run with, and their user-facing names (the ones
// NCCL_ALGO / NCCL_PROTO accept, plus Weft's own).
#pragma once
#include <cstdint>
#include <string>

namespace weft {

enum class Algorithm : uint8_t {
  kRing,          // collectives/ring (includes the one-shot ring AllReduce for small messages)
  kTree,          // collectives/tree: double binary tree
  kDdaFlat,       // collectives/dda: every rank reads all peers' input and reduces locally
  kDdaTree,       // collectives/dda: reduce-scatter then all-gather, both by direct reads
  kLowPrecision,  // collectives/lowprec: FP8 (e4m3 + block scales) all-pairs exchange
  kCount
};
constexpr int kNumAlgorithms = static_cast<int>(Algorithm::kCount);

enum class Protocol : uint8_t { kLL, kLL128, kSimple, kCount };
constexpr int kNumProtocols = static_cast<int>(Protocol::kCount);

const char* algorithmName(Algorithm a);
const char* protocolName(Protocol p);
// Case-insensitive; accepts NCCL's names and Weft's ("DDAFlat", "DDA_FLAT", "LowPrecision", ...).
bool parseAlgorithmName(const std::string& text, Algorithm* out);
bool parseProtocolName(const std::string& text, Protocol* out);

}  // namespace weft
