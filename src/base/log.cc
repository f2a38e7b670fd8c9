// Weft's logger: NCCL_DEBUG picks the level, NCCL_DEBUG_SUBSYS the subsystems whose INFO and TRACE
// lines print, NCCL_DEBUG_FILE where lines go. Settings come from weft::param (never getenv) and
// are worked out once, on the first log call; after that logEnabled is two relaxed loads.
#include "base/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.h"
#include "weft/build_config.h"

namespace weft {
namespace {

// -1 until the settings have been read; then a LogLevel.
std::atomic<int> g_level{-1};
std::atomic<uint64_t> g_mask{0};
std::atomic<bool> g_bannerPrinted{false};

// Guards the output stream and the one-time set-up, so each line is written whole.
std::mutex g_mutex;
FILE* g_out = nullptr;   // guarded by g_mutex; stderr unless NCCL_DEBUG_FILE opened
bool g_ownsOut = false;  // guarded by g_mutex
// Guarded by g_mutex (set once at set-up). Never destroyed: threads that outlive main (the
// detached bootstrap root) may still log while static destructors run.
std::string& g_host = *new std::string();

struct SubsysName {
  const char* name;
  uint64_t bits;
};
constexpr SubsysName kSubsystems[] = {
    {"INIT", kLogInit},
    {"COLL", kLogColl},
    {"P2P", kLogP2P},
    {"SHM", kLogShm},
    {"NET", kLogNet},
    {"GRAPH", kLogGraph},
    {"TUNING", kLogTuning},
    {"ENV", kLogEnv},
    {"ALLOC", kLogAlloc},
    {"CALL", kLogCall},
    {"PROXY", kLogProxy},
    {"NVLS", kLogNvls},
    {"BOOTSTRAP", kLogBootstrap},
    {"REG", kLogReg},
    {"PROFILE", kLogProfile},
    {"RAS", kLogRas},
    {"ALL", kLogAll},
};
// What NCCL's users see when they set NCCL_DEBUG=INFO and nothing else.
constexpr uint64_t kDefaultMask = kLogInit | kLogBootstrap | kLogEnv;

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

LogLevel parseLevel(std::string_view s) {
  s = trim(s);
  if (equalsIgnoreCase(s, "VERSION")) return LogLevel::kVersion;
  if (equalsIgnoreCase(s, "WARN")) return LogLevel::kWarn;
  if (equalsIgnoreCase(s, "INFO")) return LogLevel::kInfo;
  if (equalsIgnoreCase(s, "ABORT")) return LogLevel::kAbort;
  if (equalsIgnoreCase(s, "TRACE")) return LogLevel::kTrace;
  return LogLevel::kNone;  // unset; the registry has already warned about anything else
}

uint64_t parseSubsys(std::string_view s, std::vector<std::string>* notes) {
  s = trim(s);
  if (s.empty()) return kDefaultMask;
  bool invert = false;
  if (s.front() == '^') {
    invert = true;
    s.remove_prefix(1);
  }
  uint64_t mask = 0;
  while (true) {
    size_t comma = s.find(',');
    std::string_view name = trim(s.substr(0, comma));
    if (!name.empty()) {
      bool known = false;
      for (const SubsysName& sub : kSubsystems) {
        if (equalsIgnoreCase(name, sub.name)) {
          mask |= sub.bits;
          known = true;
          break;
        }
      }
      if (!known) notes->push_back("NCCL_DEBUG_SUBSYS: unknown subsystem \"" + std::string(name) + "\" ignored");
    }
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return invert ? ~mask : mask;
}

// The host name up to its first dot, as in NCCL's log lines and %h.
std::string shortHostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  std::string host(buf);
  size_t dot = host.find('.');
  if (dot != std::string::npos) host.resize(dot);
  return host.empty() ? "unknown" : host;
}

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::kVersion: return "VERSION";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kAbort: return "ABORT";
    case LogLevel::kTrace: return "TRACE";
    case LogLevel::kNone: break;
  }
  return "NONE";
}

// Reads the settings once; returns the level. Problems found on the way (a file that will not
// open, an unknown subsystem) are printed after set-up, when printing works.
int setUp() {
  std::vector<std::string> notes;
  int level;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    level = g_level.load(std::memory_order_relaxed);
    if (level >= 0) return level;
    level = static_cast<int>(parseLevel(param::debugLevel()));
    uint64_t mask = parseSubsys(param::debugSubsys(), &notes);
    g_host = shortHostName();
    g_out = stderr;
    g_ownsOut = false;
    std::string pattern = param::debugFile();
    // Only open the file when something can be printed: a process with logging off leaves no
    // empty files behind.
    if (level > static_cast<int>(LogLevel::kNone) && !pattern.empty()) {
      std::string path = expandFileName(pattern, g_host, -1);
      // "w" as NCCL does: each run starts a fresh file (use %p to keep processes apart).
      FILE* f = std::fopen(path.c_str(), "w");
      if (f != nullptr) {
        g_out = f;
        g_ownsOut = true;
      } else {
        notes.push_back("NCCL_DEBUG_FILE: cannot open \"" + path + "\" (" + std::strerror(errno) +
                        "); logging to stderr instead");
      }
    }
    g_mask.store(mask, std::memory_order_relaxed);
    g_level.store(level, std::memory_order_release);
  }
  for (const std::string& n : notes) WEFT_WARN("%s", n.c_str());
  param::reportLoadWarnings();
  return level;
}

inline int currentLevel() {
  int level = g_level.load(std::memory_order_acquire);
  return level >= 0 ? level : setUp();
}

long threadId() {
  thread_local long tid = static_cast<long>(syscall(SYS_gettid));
  return tid;
}

const char* baseName(const char* path) {
  if (path == nullptr) return "?";
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

}  // namespace

// NCCL_DEBUG_FILE's and WEFT_TRACE_FILE's pattern: %h host, %p pid, %r rank (when rank >= 0),
// %% a percent sign; any other % is kept as written.
std::string expandFileName(std::string_view pattern, const std::string& host, int rank) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = i + 1 < pattern.size() && pattern[i] == '%' ? pattern[i + 1] : '\0';
    if (c == 'h') {
      out += host;
    } else if (c == 'p') {
      out += std::to_string(static_cast<long>(getpid()));
    } else if (c == 'r' && rank >= 0) {
      out += std::to_string(rank);
    } else if (c == '%') {
      out += '%';
    } else {
      out += pattern[i];
      continue;
    }
    ++i;
  }
  return out;
}

std::string shortHostNameForFiles() { return shortHostName(); }

bool logIsSetUp() { return g_level.load(std::memory_order_acquire) >= 0; }

bool logEnabled(LogLevel level, uint64_t subsys) {
  int current = currentLevel();
  if (level == LogLevel::kNone || static_cast<int>(level) > current) return false;
  // The subsystem filter applies to the chatty levels only: warnings and the banner always show.
  if (level == LogLevel::kVersion || level == LogLevel::kWarn) return true;
  return (subsys & g_mask.load(std::memory_order_relaxed)) != 0;
}

void logPrint(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...) {
  if (!logEnabled(level, subsys)) return;

  char small[1024];
  std::string large;
  const char* message = small;
  va_list args;
  va_start(args, fmt);
  va_list again;
  va_copy(again, args);
  int n = std::vsnprintf(small, sizeof(small), fmt, args);
  va_end(args);
  if (n < 0) {
    message = "(unprintable log message)";
  } else if (static_cast<size_t>(n) >= sizeof(small)) {
    large.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(large.data(), large.size(), fmt, again);
    large.resize(static_cast<size_t>(n));
    message = large.c_str();
  }
  va_end(again);
  size_t messageLen = std::strlen(message);
  while (messageLen > 0 && message[messageLen - 1] == '\n') --messageLen;  // one newline, ours

  std::string where;
  if (level == LogLevel::kWarn || level == LogLevel::kTrace) {
    where = std::string(baseName(file)) + ":" + std::to_string(line) + " ";
  }

  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_out == nullptr) return;  // reset by a test between the check and here
  std::string text = g_host + ":" + std::to_string(static_cast<long>(getpid())) + ":" + std::to_string(threadId()) +
                     " Weft " + levelName(level) + " " + where;
  text.append(message, messageLen);
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), g_out);
  std::fflush(g_out);
}

void logVersionBanner() {
  if (!logEnabled(LogLevel::kVersion, kLogAll)) return;
  if (g_bannerPrinted.exchange(true)) return;
  const char* backend = std::strcmp(WEFT_GPU_BACKEND, "none") == 0 ? "host" : WEFT_GPU_BACKEND;
  logPrint(LogLevel::kVersion, kLogAll, __FILE__, __LINE__, "Weft %s (NCCL API %s) backend %s; NCCL version %s+weft-%s",
           WEFT_VERSION_STRING, param::kNcclApiVersion, backend, param::kNcclApiVersion, WEFT_VERSION_STRING);
}

void logResetForTesting() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_ownsOut && g_out != nullptr) std::fclose(g_out);
  g_out = nullptr;
  g_ownsOut = false;
  g_bannerPrinted.store(false);
  g_level.store(-1, std::memory_order_release);
}

}  // namespace weft
