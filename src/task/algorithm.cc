#include "task/algorithm.h"

#include <strings.h>

namespace weft {

const char* algorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kRing: return "Ring";
    case Algorithm::kTree: return "Tree";
    case Algorithm::kDdaFlat: return "DDAFlat";
    case Algorithm::kDdaTree: return "DDATree";
    case Algorithm::kLowPrecision: return "LowPrecision";
    case Algorithm::kCount: break;
  }
  return "?";
}

const char* protocolName(Protocol p) {
  switch (p) {
    case Protocol::kLL: return "LL";
    case Protocol::kLL128: return "LL128";
    case Protocol::kSimple: return "Simple";
    case Protocol::kCount: break;
  }
  return "?";
}

namespace {
// Compares ignoring case and the separators users put in (DDA_FLAT, dda-flat, DDAFlat).
bool sameName(const std::string& text, const char* name) {
  std::string a, b;
  for (char c : text)
    if (c != '_' && c != '-' && c != ' ') a.push_back(static_cast<char>(tolower(static_cast<unsigned char>(c))));
  for (const char* p = name; *p; ++p) b.push_back(static_cast<char>(tolower(static_cast<unsigned char>(*p))));
  return a == b;
}
}  // namespace

bool parseAlgorithmName(const std::string& text, Algorithm* out) {
  for (int i = 0; i < kNumAlgorithms; ++i)
    if (sameName(text, algorithmName(static_cast<Algorithm>(i)))) {
      *out = static_cast<Algorithm>(i);
      return true;
    }
  if (sameName(text, "lowp") || sameName(text, "fp8")) {
    *out = Algorithm::kLowPrecision;
    return true;
  }
  return false;
}

bool parseProtocolName(const std::string& text, Protocol* out) {
  for (int i = 0; i < kNumProtocols; ++i)
    if (sameName(text, protocolName(static_cast<Protocol>(i)))) {
      *out = static_cast<Protocol>(i);
      return true;
    }
  return false;
}

}  // namespace weft
