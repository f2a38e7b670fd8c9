// Small text helpers of the socket layer (messages and NCCL_SOCKET_* values).
#pragma once
#include <cctype>
#include <cstring>
#include <string>

namespace weft::sockets_detail {

// The message for an errno value; the GNU strerror_r is thread-safe, unlike strerror.
inline std::string errnoString(int err) {
  char buf[128];
  return std::string(strerror_r(err, buf, sizeof(buf)));
}

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace weft::sockets_detail
