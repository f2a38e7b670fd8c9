// A ncclUniqueId as hex text, for handing it to rank processes through their environment.
#pragma once
#include <cstdio>
#include <cstring>
#include <string>

#include "nccl.h"

namespace weft_stress {

inline std::string encodeId(const ncclUniqueId& id) {
  std::string hex;
  char b[3];
  for (char ch : id.internal) {
    std::snprintf(b, sizeof b, "%02x", unsigned(static_cast<unsigned char>(ch)));
    hex += b;
  }
  return hex;
}

inline bool decodeId(const char* hex, ncclUniqueId* id) {
  if (hex == nullptr || std::strlen(hex) != 2 * sizeof(id->internal)) return false;
  for (size_t i = 0; i < sizeof(id->internal); ++i) {
    unsigned v = 0;
    if (std::sscanf(hex + 2 * i, "%2x", &v) != 1) return false;
    id->internal[i] = char(v);
  }
  return true;
}

}  // namespace weft_stress
