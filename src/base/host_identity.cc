#include "base/host_identity.h"

#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "base/params.h"

namespace weft {
namespace {
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
}  // namespace

uint64_t hostHash() {
  std::string id = param::hostId();
  if (id.empty()) {
    char name[256] = "";
    gethostname(name, sizeof name - 1);
    std::string boot;
    std::ifstream f("/proc/sys/kernel/random/boot_id");
    std::getline(f, boot);
    id = std::string(name) + "/" + boot;
  }
  return fnv1a(id);
}

uint64_t machineHash() {
  std::string boot;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot);
  if (boot.empty()) {  // no /proc: the host name is the next best thing
    char name[256] = "";
    gethostname(name, sizeof name - 1);
    boot = name;
  }
  return fnv1a("machine/" + boot);
}

std::string hostName() {
  std::string id = param::hostId();
  if (!id.empty()) return id;
  char name[256] = "";
  gethostname(name, sizeof name - 1);
  return name;
}

uint64_t randomU64() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != sizeof v)
    v = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) * 0x9e3779b97f4a7c15ull;
  return v;
}

}  // namespace weft
