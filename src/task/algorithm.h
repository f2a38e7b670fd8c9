// Which algorithm and protocol a task runs with. An Algorithm is a row of the registry
// (collectives/registry.cc), which gives it its name, what it supports and how it is built; this
// layer only carries the number. Protocols are NCCL's three.
#pragma once
#include <cstdint>
#include <string>

namespace weft {

// A registry row; Algorithm{} (row 0, the ring) is what a task holds until one is selected.
enum class Algorithm : uint8_t {};
// The most rows the registry may have: algorithm sets are 32-bit masks, and the tuner sizes its
// per-call arrays with this.
constexpr int kMaxAlgorithms = 16;

enum class Protocol : uint8_t { kLL, kLL128, kSimple, kCount };
constexpr int kNumProtocols = static_cast<int>(Protocol::kCount);

const char* protocolName(Protocol p);
bool parseProtocolName(const std::string& text, Protocol* out);
// Whether a user's spelling names `name`: case and the separators people put in ('_', '-', ' ')
// are ignored, so "DDA_FLAT" and "dda-flat" name DDAFlat.
bool namesMatch(const std::string& text, const char* name);

}  // namespace weft
