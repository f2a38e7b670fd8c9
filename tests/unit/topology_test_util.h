// Shared by the topology tests: the fixtures under tests/unit/data and scratch files.
#pragma once
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace weft::topo::testing {

inline std::string dataPath(const std::string& name) {
  return std::string(WEFT_SOURCE_DIR) + "/tests/unit/data/" + name;
}

inline std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A file in /tmp that is removed when the object goes.
struct ScratchFile {
  std::string path;
  explicit ScratchFile(const std::string& tag) : path("/tmp/weft-topo-test-" + std::to_string(getpid()) + "-" + tag) {}
  ScratchFile(const std::string& tag, const std::string& text) : ScratchFile(tag) { write(text); }
  ~ScratchFile() { unlink(path.c_str()); }
  void write(const std::string& text) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
};

// text with the first occurrence of from replaced by to (the fixture must contain from).
inline std::string edited(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at == std::string::npos) return "<fixture does not contain " + from + ">";
  return text.replace(at, from.size(), to);
}

}  // namespace weft::topo::testing
