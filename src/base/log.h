// Logging by level x subsystem, with NCCL_DEBUG / NCCL_DEBUG_SUBSYS / NCCL_DEBUG_FILE semantics.
// The level check is a cached load, so disabled INFO/TRACE lines cost nothing but a branch.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace weft {

enum class LogLevel : int { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kAbort = 4, kTrace = 5 };

// Subsystem bits; their names are NCCL's (INIT, COLL, P2P, SHM, NET, GRAPH, TUNING, ENV, ALLOC,
// CALL, PROXY, NVLS, BOOTSTRAP, REG, PROFILE, RAS, ALL).
enum LogSubsys : uint64_t {
  kLogInit = 1ull << 0,
  kLogColl = 1ull << 1,
  kLogP2P = 1ull << 2,
  kLogShm = 1ull << 3,
  kLogNet = 1ull << 4,
  kLogGraph = 1ull << 5,
  kLogTuning = 1ull << 6,
  kLogEnv = 1ull << 7,
  kLogAlloc = 1ull << 8,
  kLogCall = 1ull << 9,
  kLogProxy = 1ull << 10,
  kLogNvls = 1ull << 11,
  kLogBootstrap = 1ull << 12,
  kLogReg = 1ull << 13,
  kLogProfile = 1ull << 14,
  kLogRas = 1ull << 15,
  kLogAll = ~0ull,
};

// True once the logging settings have been read. Until then logEnabled() reads them, which code that
// runs while parameters are being read (the environment plugin's logger) must not make it do.
bool logIsSetUp();
// True when a message of this level and subsystem would be printed.
bool logEnabled(LogLevel level, uint64_t subsys);
// Prints one line: "host:pid:tid Weft LEVEL file:line message" (file:line for WARN and TRACE).
void logPrint(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
// Prints the version banner once per process when NCCL_DEBUG is VERSION or more verbose.
void logVersionBanner();
// A file-name pattern as NCCL_DEBUG_FILE takes it: %h host, %p process id, %r rank (only when
// rank >= 0), %% a percent sign. The host is shortHostNameForFiles() (the name before the first dot).
std::string expandFileName(std::string_view pattern, const std::string& host, int rank);
std::string shortHostNameForFiles();
// Forgets the cached NCCL_DEBUG* settings (tests change the environment between cases).
void logResetForTesting();

}  // namespace weft

#define WEFT_WARN(...) ::weft::logPrint(::weft::LogLevel::kWarn, ::weft::kLogAll, __FILE__, __LINE__, __VA_ARGS__)
#define WEFT_INFO(sub, ...)                                                              \
  do {                                                                                   \
    if (::weft::logEnabled(::weft::LogLevel::kInfo, (sub)))                              \
      ::weft::logPrint(::weft::LogLevel::kInfo, (sub), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define WEFT_TRACE(sub, ...)                                                              \
  do {                                                                                    \
    if (::weft::logEnabled(::weft::LogLevel::kTrace, (sub)))                              \
      ::weft::logPrint(::weft::LogLevel::kTrace, (sub), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
