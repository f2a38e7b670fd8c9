#include "transports/shm/shm_memory.h"

#include <cstdio>
#include <cstring>
#include <fstream>

namespace weft {
namespace {

// A "Name: N kB" line of /proc/meminfo in bytes, or -1.
int64_t meminfoBytes(const std::string& text, const char* field) {
  const size_t at = text.find(std::string("\n") + field + ":");
  if (at == std::string::npos) return -1;
  long long kb = -1;
  if (sscanf(text.c_str() + at + strlen(field) + 2, "%lld", &kb) != 1) return -1;
  return static_cast<int64_t>(kb) * 1024;
}

// A cgroup v2 file holding one number ("max" reads as no limit), or -1.
int64_t cgroupNumber(const std::string& path) {
  std::ifstream f(path);
  std::string v;
  if (!(f >> v) || v == "max") return -1;
  return static_cast<int64_t>(strtoull(v.c_str(), nullptr, 10));
}

}  // namespace

MemoryRoom memoryRoom() {
  MemoryRoom room;
  std::ifstream meminfo("/proc/meminfo");
  std::string text = "\n";  // so that every field, the first too, follows a newline
  for (std::string line; std::getline(meminfo, line);) text += line + "\n";
  const int64_t avail = meminfoBytes(text, "MemAvailable"), swap = meminfoBytes(text, "SwapFree");
  if (avail >= 0) {
    room.bytes = static_cast<uint64_t>(avail + (swap > 0 ? swap : 0));
    room.source = "MemAvailable + SwapFree in /proc/meminfo";
  }
  // cgroup v2: "0::/path". Any ancestor's memory.max may be the one that binds.
  std::ifstream cg("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(cg, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  for (std::string dir = path; !path.empty();) {
    const std::string base = "/sys/fs/cgroup" + (dir == "/" ? std::string() : dir);
    const int64_t max = cgroupNumber(base + "/memory.max"), used = cgroupNumber(base + "/memory.current");
    if (max >= 0 && used >= 0) {
      const uint64_t left = max > used ? static_cast<uint64_t>(max - used) : 0;
      if (left < room.bytes) {
        room.bytes = left;
        room.source = "memory.max - memory.current of cgroup " + base;
      }
    }
    if (dir == "/" || dir.empty()) break;
    const size_t slash = dir.rfind('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
  return room;
}

}  // namespace weft
