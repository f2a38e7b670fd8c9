// The calibration cache file: where it lives, how it is written (whole, by rename) and read back
// (every field present and plausible, or the file is not used).
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "base/params.h"
#include "base/text.h"
#include "tuning/calibration.h"

namespace weft {
namespace {

// Version 3 added the measurement's state, time and load; version 4 measures the network
// constants (the host's TCP stack) instead of leaving their defaults. Files of older versions
// (another header) are ignored, and so is their name (calibration-v3-...).
constexpr const char* kCacheHeader = "weft-tuner-calibration 4";

std::string cpuModel() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 1);
    }
  return "unknown-cpu";
}

std::string fileSafe(const std::string& s) {
  std::string out;
  for (char c : s) out.push_back(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_');
  return out;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string homeCacheDir() {
  passwd pw, *found = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &found) != 0 || found == nullptr || pw.pw_dir == nullptr) return "";
  return std::string(pw.pw_dir) + "/.cache";
}

// Creates the directories along the way; an existing one is fine.
void makeParents(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1))
    mkdir(path.substr(0, slash).c_str(), 0755);
}

std::string fileText(const Calibration& cal) {
  std::ostringstream f;
  char line[160];
  f << kCacheHeader << "\ncpu " << trimBlanks(cpuModel()) << "\n";
  f << "state " << (cal.provisional ? "provisional" : "final") << "\n";
  if (cal.provisional) f << "provisional_why " << cal.provisionalWhy << "\n";
  std::snprintf(line, sizeof(line), "measured_at %.3f\nmeasured_by_pid %ld\nmeasure_ms %.1f\nrepeats %d\n",
                cal.measuredAt, cal.pid, cal.measureMs, cal.repeats);
  f << line;
  std::snprintf(line, sizeof(line), "loadavg1 %.2f\nrunnable_others %d\nusable_cores %d\nmax_spread %.4f\n",
                cal.load.loadavg1, cal.load.runnableOthers, cal.load.usableCores, cal.load.maxSpread);
  f << line;
  if (!cal.load.spreadField.empty()) f << "spread_field " << cal.load.spreadField << "\n";
  for (int i = 0; i < kNumConstantFields; ++i) {
    std::snprintf(line, sizeof(line), "%s %.9g\n", kConstantFields[i].name,
                  cal.constants.*kConstantFields[i].field);  // roundAsSaved's precision
    f << line;
  }
  return f.str();
}

// Seconds since the epoch of the year 10000: a later measured_at is a corrupt file (and no time_t
// that describeCalibration could print).
constexpr double kLatestMeasuredAt = 253402300800.0;

// A number from the file; false when it is not one.
bool number(const std::string& text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && end != text.c_str() && *end == '\0' && std::isfinite(*out);
}

// Where a numeric key of the file goes; nullptr for a key this version does not know (skipped).
double* numericSlot(const std::string& key, Calibration* cal, double* scratch) {
  for (int i = 0; i < kNumConstantFields; ++i)
    if (key == kConstantFields[i].name) return &(cal->constants.*kConstantFields[i].field);
  if (key == "measured_at") return &cal->measuredAt;
  if (key == "measure_ms") return &cal->measureMs;
  if (key == "loadavg1") return &cal->load.loadavg1;
  if (key == "max_spread") return &cal->load.maxSpread;
  bool integer = key == "measured_by_pid" || key == "repeats" || key == "runnable_others" || key == "usable_cores";
  return integer ? scratch : nullptr;
}

// One "key value" line into *cal; false, with *why, when the value is bad.
bool readLine(const std::string& key, const std::string& value, Calibration* cal, int* constantsFound, bool* stateFound,
              std::string* why) {
  if (key == "spread_field") cal->load.spreadField = value;
  if (key == "provisional_why") cal->provisionalWhy = value;
  if (key == "state") {
    *stateFound = value == "final" || value == "provisional";
    cal->provisional = value == "provisional";
    if (!*stateFound) *why = "state \"" + value + "\" is neither final nor provisional";
    return *stateFound;
  }
  double scratch = 0;
  double* slot = numericSlot(key, cal, &scratch);
  if (slot == nullptr) return true;
  if (!number(value, slot)) {
    *why = key + " \"" + value + "\" is not a number";
    return false;
  }
  // The integer fields are read as numbers too; one beyond int's range is no count this file
  // could hold (and converting it would be undefined).
  if (slot == &scratch && !(scratch >= INT_MIN && scratch <= INT_MAX)) {
    *why = key + " \"" + value + "\" is out of range";
    return false;
  }
  if (key == "measured_by_pid") cal->pid = long(scratch);
  if (key == "repeats") cal->repeats = int(scratch);
  if (key == "runnable_others") cal->load.runnableOthers = int(scratch);
  if (key == "usable_cores") cal->load.usableCores = int(scratch);
  for (int i = 0; i < kNumConstantFields; ++i) *constantsFound += key == kConstantFields[i].name;
  return true;
}

}  // namespace

std::string calibrationCachePath() {
  std::string dir = param::cacheDir();
  if (dir.empty()) dir = homeCacheDir();
  if (dir.empty()) return "";
  char host[256] = "unknown-host";
  gethostname(host, sizeof(host) - 1);
  char key[32];
  std::snprintf(key, sizeof(key), "%016llx", static_cast<unsigned long long>(fnv1a(cpuModel())));
  return dir + "/weft/calibration-v4-" + fileSafe(host) + "-" + key + ".txt";
}

std::string calibrationLockPath(const std::string& cachePath) {
  size_t dot = cachePath.rfind(".txt");
  return (dot == std::string::npos ? cachePath : cachePath.substr(0, dot)) + ".lock";
}

bool saveCalibration(const std::string& path, const Calibration& cal, std::string* why) {
  makeParents(path);
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(tmp);
    if (!f) {
      *why = "cannot write " + tmp + ": " + std::strerror(errno);
      return false;
    }
    f << fileText(cal);
    f.flush();
    if (!f.good()) {
      *why = "write to " + tmp + " failed";
      f.close();
      std::remove(tmp.c_str());
      return false;
    }
  }
  // Rename, so a process reading the cache never sees half a file.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *why = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool parseCalibration(const std::string& text, const std::string& path, Calibration* cal, std::string* why) {
  std::istringstream f(text);
  std::string line;
  if (!std::getline(f, line) || line != kCacheHeader) {
    *why = path + " is not a \"" + kCacheHeader + "\" file";
    return false;
  }
  Calibration out;
  int found = 0;
  bool stateFound = false;
  while (std::getline(f, line)) {
    size_t space = line.find(' ');
    if (line.empty() || space == std::string::npos) continue;
    if (!readLine(line.substr(0, space), trimBlanks(line.substr(space + 1)), &out, &found, &stateFound, why)) {
      *why = path + ": " + *why;
      return false;
    }
  }
  std::string implausible = implausibleConstant(out.constants);
  if (found != kNumConstantFields || !stateFound || out.measuredAt <= 0) {
    *why = path + " lacks " +
           (found != kNumConstantFields ? "some constants"
            : !stateFound               ? "its state"
                                        : "measured_at");
    return false;
  }
  if (!implausible.empty()) {
    *why = path + ": " + implausible;
    return false;
  }
  if (out.measuredAt >= kLatestMeasuredAt) {
    *why = path + ": measured_at " + std::to_string(out.measuredAt) + " is no time this file could have been written";
    return false;
  }
  *cal = out;
  return true;
}

bool loadCalibration(const std::string& path, Calibration* cal, std::string* why) {
  std::ifstream f(path);
  if (!f) {
    *why = "no file " + path;
    return false;
  }
  std::ostringstream text;
  text << f.rdbuf();
  return parseCalibration(text.str(), path, cal, why);
}

std::string describeCalibration(const Calibration& cal) {
  char when[64] = "at an unknown time";
  const bool printable = cal.measuredAt > 0 && cal.measuredAt < kLatestMeasuredAt;
  time_t secs = printable ? static_cast<time_t>(cal.measuredAt) : 0;
  tm utc;
  if (printable && gmtime_r(&secs, &utc) != nullptr) std::strftime(when, sizeof(when), "%F %T UTC", &utc);
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "measured %s by pid %ld in %.0f ms, %d rounds; load: loadavg %.2f, %d other runnable task(s) on %d "
                "usable core(s), largest spread %.0f%% (%s); ",
                when, cal.pid, cal.measureMs, cal.repeats, cal.load.loadavg1, cal.load.runnableOthers,
                cal.load.usableCores, 100 * cal.load.maxSpread,
                cal.load.spreadField.empty() ? "-" : cal.load.spreadField.c_str());
  return buf + (cal.provisional ? "provisional (" + cal.provisionalWhy + ")" : std::string("final"));
}

void roundAsSaved(HostConstants* hc) {
  for (int i = 0; i < kNumConstantFields; ++i) {
    char text[48];
    std::snprintf(text, sizeof(text), "%.9g", hc->*kConstantFields[i].field);
    hc->*kConstantFields[i].field = std::strtod(text, nullptr);
  }
}

}  // namespace weft
