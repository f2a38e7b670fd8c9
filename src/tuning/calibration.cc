// Which constants a process uses: the cache, one measurement per host at a time under an flock,
// or the defaults (calibration.h describes the protocol).
#include "tuning/calibration.h"

#include <fcntl.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/log.h"
#include "base/params.h"
#include "base/text.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

double nowEpochS() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// An flock on the lock file beside the cache file, held until the object goes. The kernel drops
// it when the process dies, so a lock left by a killed process blocks no one (the file's mere
// existence means nothing).
class CalibrationLock {
 public:
  enum class Got { kAtOnce, kAfterWait, kTimedOut, kNoLockFile };

  explicit CalibrationLock(std::string path) : path_(std::move(path)) {}
  ~CalibrationLock() {
    if (fd_ >= 0) close(fd_);  // releases the flock
  }
  CalibrationLock(const CalibrationLock&) = delete;
  CalibrationLock& operator=(const CalibrationLock&) = delete;

  // Takes the lock, waiting at most waitMs (polling: flock itself has no timeout). *waitedMs is
  // how long it waited; *why says what went wrong for kTimedOut and kNoLockFile.
  Got acquire(int waitMs, double* waitedMs, std::string* why) {
    *waitedMs = 0;
    for (size_t slash = path_.find('/', 1); slash != std::string::npos; slash = path_.find('/', slash + 1))
      mkdir(path_.substr(0, slash).c_str(), 0755);
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      *why = "cannot open the lock file " + path_ + ": " + std::strerror(errno);
      return Got::kNoLockFile;
    }
    auto t0 = Clock::now();
    for (int sleepMs = 1;; sleepMs = std::min(sleepMs * 2, 10)) {
      if (flock(fd_, LOCK_EX | LOCK_NB) == 0) return *waitedMs > 0 ? Got::kAfterWait : Got::kAtOnce;
      if (errno != EWOULDBLOCK && errno != EINTR) {
        *why = "flock on " + path_ + " failed: " + std::strerror(errno);
        return Got::kNoLockFile;
      }
      *waitedMs = std::max(1e-3, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (*waitedMs >= waitMs) {
        *why = "another process still held the lock " + path_ + " after " + std::to_string(waitMs) + " ms";
        return Got::kTimedOut;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(sleepMs));
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// What hostConstants() settles on.
struct Resolved {
  HostConstants constants;
  std::string source = "defaults";
  bool haveRecord = false;
  Calibration record;
};

// A final result, or a provisional one measured within kProvisionalReuseS (by a process of the
// same job, started together with this one).
bool loadUsable(const std::string& path, Calibration* cal, std::string* why) {
  if (!loadCalibration(path, cal, why)) return false;
  double age = nowEpochS() - cal->measuredAt;
  if (cal->provisional && !(age >= -1 && age <= kProvisionalReuseS)) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), " holds a provisional result from %.0f s ago", age);
    *why = path + buf;
    return false;
  }
  return true;
}

Resolved fromCache(const std::string& path, const Calibration& cal, const std::string& note) {
  Resolved r;
  r.constants = cal.constants;
  r.haveRecord = true;
  r.record = cal;
  r.source = "cache " + path;
  std::string extra = note;
  if (cal.provisional) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "provisional, measured %.1f s ago by pid %ld", nowEpochS() - cal.measuredAt,
                  cal.pid);
    extra += (extra.empty() ? "" : "; ") + std::string(buf);
  }
  if (!extra.empty()) r.source += " (" + extra + ")";
  return r;
}

Resolved defaultsBecause(const std::string& why) {
  Resolved r;
  r.source = "defaults (" + why + ")";
  WEFT_WARN("tuner calibration: using the built-in constants: %s", why.c_str());
  return r;
}

// Measures, and writes the result when `mayWrite` (this process holds the lock).
Resolved measureAndSave(const std::string& path, bool mayWrite, const std::string& whyNotWrite) {
  Resolved r;
  r.record = measureCalibration();
  // As the file will hold them: a process that loads it must get exactly these (they steer the
  // tuner, and processes of one host must choose alike).
  roundAsSaved(&r.record.constants);
  r.constants = r.record.constants;
  r.haveRecord = true;
  std::string why = whyNotWrite;
  if (path.empty()) why = "neither WEFT_CACHE_DIR, XDG_CACHE_HOME nor a home directory is known";
  if (!path.empty() && mayWrite && saveCalibration(path, r.record, &why))
    r.source = "measured, saved to " + path +
               (r.record.provisional ? " as provisional (" + r.record.provisionalWhy + ")" : "");
  else
    r.source = "measured, not cached: " + why;
  return r;
}

// WEFT_TUNER_CALIBRATE=auto: the cache; else one process measures under the lock while the
// others wait for its result.
Resolved resolveAuto(const std::string& path) {
  if (path.empty()) return measureAndSave(path, false, "");
  Calibration cal;
  std::string why;
  if (loadUsable(path, &cal, &why)) return fromCache(path, cal, "");
  CalibrationLock lock(calibrationLockPath(path));
  double waitedMs = 0;
  switch (lock.acquire(kWaitForMeasurerMs, &waitedMs, &why)) {
    case CalibrationLock::Got::kAtOnce:
      // Another process may have finished between the first look and the lock.
      if (loadUsable(path, &cal, &why)) return fromCache(path, cal, "");
      return measureAndSave(path, true, "");
    case CalibrationLock::Got::kAfterWait: {
      if (loadUsable(path, &cal, &why)) {
        char note[96];
        std::snprintf(note, sizeof(note), "loaded after waiting %.0f ms for the calibration lock", waitedMs);
        return fromCache(path, cal, note);
      }
      return defaultsBecause("waited " + std::to_string(long(waitedMs)) +
                             " ms for another process's calibration, then found no usable result: " + why);
    }
    case CalibrationLock::Got::kTimedOut: return defaultsBecause(why);
    case CalibrationLock::Got::kNoLockFile: break;
  }
  // No lock to be had (a read-only cache directory, say): measure for this process alone.
  return measureAndSave(path, false, why);
}

// WEFT_TUNER_CALIBRATE=redo: measure; write only while holding the lock.
Resolved resolveRedo(const std::string& path) {
  if (path.empty()) return measureAndSave(path, false, "");
  CalibrationLock lock(calibrationLockPath(path));
  double waitedMs = 0;
  std::string why;
  CalibrationLock::Got got = lock.acquire(kWaitForMeasurerMs, &waitedMs, &why);
  bool held = got == CalibrationLock::Got::kAtOnce || got == CalibrationLock::Got::kAfterWait;
  return measureAndSave(path, held, why);
}

bool sameName(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

// The process's constants. Threads share one result: the first one resolves it under gMutex
// (waiting for another process's measurement included) while the others wait for it.
std::mutex gMutex;
bool gReady = false;
Resolved gResolved;

}  // namespace

const HostConstants& hostConstants() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gReady) return gResolved.constants;
  const std::string mode = param::tunerCalibrate();
  Resolved r;
  if (mode == "auto")
    r = resolveAuto(calibrationCachePath());
  else if (mode == "redo")
    r = resolveRedo(calibrationCachePath());
  gResolved = r;
  gReady = true;
  WEFT_INFO(kLogTuning, "tuner constants (%s): %s", r.source.c_str(), formatHostConstants(r.constants).c_str());
  if (r.haveRecord) WEFT_INFO(kLogTuning, "tuner calibration %s", describeCalibration(r.record).c_str());
  return gResolved.constants;
}

std::string hostConstantsSource() {
  hostConstants();
  std::lock_guard<std::mutex> lock(gMutex);
  return gResolved.source;
}

bool hostCalibrationRecord(Calibration* out) {
  hostConstants();
  std::lock_guard<std::mutex> lock(gMutex);
  if (gResolved.haveRecord) *out = gResolved.record;
  return gResolved.haveRecord;
}

CalibrationRun calibrateNow() {
  CalibrationRun run;
  run.path = calibrationCachePath();
  if (run.path.empty()) {
    run.cal = measureCalibration();
    run.outcome = "not written: neither WEFT_CACHE_DIR, XDG_CACHE_HOME nor a home directory is known";
    return run;
  }
  CalibrationLock lock(calibrationLockPath(run.path));
  double waitedMs = 0;
  std::string why;
  CalibrationLock::Got got = lock.acquire(kWaitForMeasurerMs, &waitedMs, &why);
  run.cal = measureCalibration();
  if (got != CalibrationLock::Got::kAtOnce && got != CalibrationLock::Got::kAfterWait) {
    run.outcome = "not written: " + why;
  } else if (!saveCalibration(run.path, run.cal, &why)) {
    run.outcome = "not written: " + why;
  } else {
    run.written = true;
    run.outcome = run.cal.provisional
                      ? "written to " + run.path + " as provisional: processes starting within " +
                            std::to_string(int(kProvisionalReuseS)) + " s reuse it, later ones measure again"
                      : "written to " + run.path + ": processes on this host load it from there";
  }
  return run;
}

void applyConstantOverrides(const std::string& text, HostConstants* hc, std::string* bad) {
  std::stringstream ss(text);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    tok = trimBlanks(tok);
    if (tok.empty()) continue;
    size_t eq = tok.find('=');
    bool ok = false;
    if (eq != std::string::npos) {
      std::string name = trimBlanks(tok.substr(0, eq)), value = trimBlanks(tok.substr(eq + 1));
      char* end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (!value.empty() && end && *end == '\0' && std::isfinite(v) && v > 0)
        for (int i = 0; i < kNumConstantFields; ++i)
          if (sameName(name, kConstantFields[i].name)) {
            hc->*kConstantFields[i].field = v;
            ok = true;
          }
    }
    if (!ok) *bad += (bad->empty() ? "\"" : ", \"") + tok + "\"";
  }
}

std::string formatHostConstants(const HostConstants& hc) {
  std::string out;
  char buf[64];
  for (int i = 0; i < kNumConstantFields; ++i) {
    std::snprintf(buf, sizeof(buf), "%s%s=%.4g", i ? " " : "", kConstantFields[i].name, hc.*kConstantFields[i].field);
    out += buf;
  }
  return out;
}

void calibrationResetForTesting() {
  std::lock_guard<std::mutex> lock(gMutex);
  gReady = false;
}

}  // namespace weft
