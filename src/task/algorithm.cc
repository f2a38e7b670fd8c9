#include "task/algorithm.h"

#include <cctype>

namespace weft {

const char* protocolName(Protocol p) {
  switch (p) {
    case Protocol::kLL: return "LL";
    case Protocol::kLL128: return "LL128";
    case Protocol::kSimple: return "Simple";
    case Protocol::kCount: break;
  }
  return "?";
}

bool namesMatch(const std::string& text, const char* name) {
  std::string a, b;
  for (char c : text)
    if (c != '_' && c != '-' && c != ' ') a.push_back(static_cast<char>(tolower(static_cast<unsigned char>(c))));
  for (const char* p = name; *p; ++p) b.push_back(static_cast<char>(tolower(static_cast<unsigned char>(*p))));
  return a == b;
}

bool parseProtocolName(const std::string& text, Protocol* out) {
  for (int i = 0; i < kNumProtocols; ++i)
    if (namesMatch(text, protocolName(static_cast<Protocol>(i)))) {
      *out = static_cast<Protocol>(i);
      return true;
    }
  return false;
}

}  // namespace weft
