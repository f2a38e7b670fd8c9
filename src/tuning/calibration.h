// Host-mode calibration: the cost model's machine constants measured on this host and cached in
// $WEFT_CACHE_DIR/weft/ (alias $XDG_CACHE_HOME, else ~/.cache/weft/), one file per host name and
// CPU model. WEFT_TUNER_CALIBRATE picks auto (cache, else measure), redo (measure and rewrite) or
// off (built-in defaults). These are this host's contribution: a communicator uses the constants
// its ranks agree on (agreed_constants.h), and the agreed WEFT_TUNER_CONSTANTS applies there.
//
// Right the first time, when many processes start at once on an empty cache:
//  - One process per host measures at a time: it holds an flock on the lock file next to the
//    cache file while it measures and writes. The others wait for it (at most kWaitForMeasurerMs),
//    then load what it wrote; when the wait runs out or its result is unusable they use the
//    built-in defaults and say so in hostConstantsSource(). The kernel drops the flock of a process
//    that dies, so a killed measurer blocks no one.
//  - Each probe runs kCalibrationRepeats times, interleaved, and the median is kept. Every value
//    must lie in its plausible range (calibrationPlausibleRange) or the field keeps its default.
//  - The load is recorded with the result (CalibrationLoad). A measurement taken on a loaded
//    machine (calibrationLoadedWhy) is used by this process and written marked provisional: only
//    processes that start within kProvisionalReuseS of it (the ranks of one job) reuse it; every
//    later process measures again.
#pragma once
#include <string>
#include <vector>

#include "collectives/model/cost_model.h"

namespace weft {

// How long a process waits for another process's measurement before using the defaults. The
// measurement itself takes well under a second (kCalibrationBudgetMs).
constexpr int kWaitForMeasurerMs = 3000;
// A measurement stops starting new repeats after this long (each repeat is a few ms); the first
// round always runs.
constexpr int kCalibrationBudgetMs = 400;
constexpr int kCalibrationRepeats = 5;
// The repeats of a probe are said to spread when their interquartile range exceeds this share
// of their median.
constexpr double kMaxCalibrationSpread = 0.5;
// How long a provisional (loaded) result is reused by other processes.
constexpr double kProvisionalReuseS = 10;

// What the machine was doing while it was measured.
struct CalibrationLoad {
  double loadavg1 = -1;     // /proc/loadavg's 1-minute average at the start (-1 = unknown)
  int runnableOthers = -1;  // runnable tasks besides the measuring thread, median of the samples
                            // taken between rounds (-1 = unknown)
  int usableCores = 0;      // CPUs this process may run on
  double maxSpread = 0;     // largest interquartile range / median over the probes
  std::string spreadField;  // the probe it belongs to
};

// One measurement, as measured or as read back from the cache file.
struct Calibration {
  HostConstants constants;
  CalibrationLoad load;
  double measuredAt = 0;  // seconds since the epoch
  double measureMs = 0;   // how long the measurement took
  int repeats = 0;        // rounds of repeats finished
  long pid = 0;           // the process that measured
  bool provisional = false;
  std::string provisionalWhy;  // why it is provisional: the load, an implausible or failed probe
};

// The constants in effect for this process (calibrated on first call; thread-safe).
const HostConstants& hostConstants();
// Where they came from: "measured, ...", "cache <path>[ (...)]" or "defaults[ (...)]".
std::string hostConstantsSource();
// The measurement behind hostConstants() (measured here or loaded from the cache). False when
// they are the defaults.
bool hostCalibrationRecord(Calibration* out);

// Measures now, under the lock, and writes the cache (weft-info --calibrate). Does not change
// this process's hostConstants().
struct CalibrationRun {
  Calibration cal;
  std::string path;  // the cache file ("" = no cache directory is known)
  bool written = false;
  std::string outcome;  // what happened to the result, in words
};
CalibrationRun calibrateNow();

// The measurement itself (bounded: every probe has a deadline, the whole by kCalibrationBudgetMs
// plus one round). Sets provisional when the machine was loaded or a probe failed.
Calibration measureCalibration();

// The rule for "loaded": other runnable tasks + the probes' two threads exceed the usable cores,
// or some probe's repeats spread by more than kMaxCalibrationSpread. "" when not loaded.
std::string calibrationLoadedWhy(const CalibrationLoad& load);
// The sane range of each constant; a value outside it is a failed measurement or a bad file.
void calibrationPlausibleRange(const char* field, double* lo, double* hi);
// "" when every constant is within its range, else the first that is not, in words.
std::string implausibleConstant(const HostConstants& hc);
// Robust statistics of the repeats (both take the samples by value: they sort them).
double medianOf(std::vector<double> v);
double spreadOf(std::vector<double> v);  // interquartile range / median

// The cache file for this host and CPU model ("" when no cache directory is known), and the lock
// file beside it.
std::string calibrationCachePath();
std::string calibrationLockPath(const std::string& cachePath);
bool saveCalibration(const std::string& path, const Calibration& cal, std::string* why);
// Rounds each constant as the file holds it (9 significant digits), so that the process that
// measured uses exactly what the processes that load its file read.
void roundAsSaved(HostConstants* hc);
// False, with *why, when the file is missing, from another format version, malformed or holds an
// implausible constant.
bool loadCalibration(const std::string& path, Calibration* cal, std::string* why);
// The same for the file's text (path names it in messages): what loadCalibration checks.
bool parseCalibration(const std::string& text, const std::string& path, Calibration* cal, std::string* why);

// Applies "name=value,..." (names as in kConstantFields, case-insensitive). Each bad token is
// appended to *bad and skipped.
void applyConstantOverrides(const std::string& text, HostConstants* hc, std::string* bad);

// "copyGBps=8.1 reduceGBps=5 ..." on one line.
std::string formatHostConstants(const HostConstants& hc);
// "measured 2026-11-23 17:50:12 UTC by pid 42 in 180 ms, 5 repeats; load: ...; final".
std::string describeCalibration(const Calibration& cal);

// Forgets the process's constants so the next hostConstants() runs again (tests).
void calibrationResetForTesting();

}  // namespace weft
