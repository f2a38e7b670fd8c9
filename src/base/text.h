// Text helpers shared by Weft's parsers (settings, the calibration file, socket addresses): they
// all trim and split the same way, so that a value reads the same wherever it is given.
#pragma once
#include <string>
#include <vector>

namespace weft {

// s without its leading and trailing spaces and tabs.
inline std::string trimBlanks(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// The pieces of s between the separators, empty pieces kept ("a,,b" gives three, "" gives one), so
// that a parser sees a doubled or trailing separator and can call the value malformed.
inline std::vector<std::string> splitAt(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep)
      out.emplace_back();
    else
      out.back().push_back(c);
  }
  return out;
}

}  // namespace weft
