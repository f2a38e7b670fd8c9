// The measurement: every probe repeated, the median kept, each value checked against its sane
// range, and the machine's load recorded beside it (calibration.h says why).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>

#include "base/log.h"
#include "tuning/calibration.h"
#include "tuning/calibration_probes.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Range {
  const char* field;
  double lo, hi;
};

// Wide on purpose: these catch a probe that measured a stall or a broken clock, and a cache file
// that was edited or damaged, not a slow machine. A copy below 0.1 GB/s or a handoff above 1 ms
// is no machine Weft runs on; it is a measurement taken while the thread was descheduled.
const Range kRanges[] = {
    {"copyGBps", 0.1, 1000},          {"reduceGBps", 0.05, 1000},   {"handoffUs", 0.005, 1000},
    {"stepUs", 0.0005, 1000},         {"futexWakeUs", 0.05, 10000}, {"yieldHandoffUs", 0.01, 10000},
    {"memGBps", 0.1, 1000},           {"peerReadGBps", 0.1, 1000},  {"cacheMiB", 0.0625, 65536},
    {"netGBps", 0.001, 10000},        {"netLatUs", 0.01, 1e6},      {"crossNumaBwScale", 0.01, 100},
    {"crossNumaLatScale", 0.01, 100},
};

// /proc/loadavg: "1.60 0.52 0.18 3/123 4567" (averages, runnable/total tasks, last pid).
bool readLoadavg(double* avg1, int* runnable) {
  FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return false;
  double a5, a15;
  int total;
  bool ok = std::fscanf(f, "%lf %lf %lf %d/%d", avg1, &a5, &a15, runnable, &total) == 5;
  std::fclose(f);
  return ok;
}

// Runnable tasks on the machine besides the thread that asks (it is running, so it counts).
int runnableOthers() {
  double avg1;
  int runnable;
  return readLoadavg(&avg1, &runnable) ? std::max(0, runnable - 1) : -1;
}

// One constant and the probe that measures it, with its repeats.
struct Probe {
  double HostConstants::*field;
  const char* name;
  std::function<double()> run;
  std::vector<double> samples;
  // Returns 0 where it cannot run at all (the TCP probes without a loopback): then the default
  // stays, and the calibration is not provisional for it, since measuring again would not help.
  bool mayBeUnavailable = false;
  bool unavailable = false;
};

std::vector<Probe> makeProbes(probes::MemCopy* mem) {
  return {
      {&HostConstants::copyGBps, "copyGBps", probes::copyGBps, {}},
      {&HostConstants::reduceGBps, "reduceGBps", probes::reduceGBps, {}},
      {&HostConstants::stepUs, "stepUs", probes::stepUs, {}},
      {&HostConstants::handoffUs, "handoffUs", probes::handoffUs, {}},
      {&HostConstants::futexWakeUs, "futexWakeUs", probes::futexWakeUs, {}},
      {&HostConstants::yieldHandoffUs, "yieldHandoffUs", probes::yieldHandoffUs, {}},
      {&HostConstants::memGBps, "memGBps", [mem] { return mem->gBps(); }, {}},
      {&HostConstants::peerReadGBps, "peerReadGBps", probes::peerReadGBps, {}},
      {&HostConstants::netGBps, "netGBps", probes::tcpGBps, {}, true},
      {&HostConstants::netLatUs, "netLatUs", probes::tcpLatUs, {}, true},
  };
}

void addReason(std::string* why, const std::string& reason) { *why += (why->empty() ? "" : "; ") + reason; }

// The median of a probe's repeats becomes its constant; a probe with no finished repeat, or an
// implausible median, leaves the default and makes the result provisional.
void settle(const Probe& p, Calibration* cal) {
  if (p.samples.empty() && p.unavailable) return;
  if (p.samples.empty()) {
    addReason(&cal->provisionalWhy, std::string(p.name) + ": no repeat finished within its deadline");
    return;
  }
  double value = medianOf(p.samples), lo, hi;
  calibrationPlausibleRange(p.name, &lo, &hi);
  if (!(value >= lo && value <= hi)) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s: measured %.4g, outside the plausible %g..%g (the default is used)", p.name,
                  value, lo, hi);
    addReason(&cal->provisionalWhy, buf);
    return;
  }
  cal->constants.*p.field = value;
  double spread = spreadOf(p.samples);
  if (spread > cal->load.maxSpread) {
    cal->load.maxSpread = spread;
    cal->load.spreadField = p.name;
  }
}

// Virtual machines often report the whole host's last-level cache: trust at most 32 MiB of it.
void setCacheSize(HostConstants* hc) {
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) hc->cacheMiB = std::min(32.0, double(l3) / 1048576.0);
}

}  // namespace

double medianOf(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The middle half of the sorted samples (for five: the 2nd to the 4th), so one outlier repeat
// neither moves it nor makes the probe look noisy; two or more do.
double spreadOf(std::vector<double> v) {
  if (v.size() < 2) return 0;
  std::sort(v.begin(), v.end());
  size_t cut = (v.size() - 1) / 4;
  double med = medianOf(v);
  return med > 0 ? (v[v.size() - 1 - cut] - v[cut]) / med : 0;
}

void calibrationPlausibleRange(const char* field, double* lo, double* hi) {
  *lo = 0;
  *hi = std::numeric_limits<double>::infinity();
  for (const Range& r : kRanges)
    if (std::strcmp(r.field, field) == 0) {
      *lo = r.lo;
      *hi = r.hi;
    }
}

std::string implausibleConstant(const HostConstants& hc) {
  for (int i = 0; i < kNumConstantFields; ++i) {
    double v = hc.*kConstantFields[i].field, lo, hi;
    calibrationPlausibleRange(kConstantFields[i].name, &lo, &hi);
    if (!(v >= lo && v <= hi)) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "%s=%.4g is outside the plausible %g..%g", kConstantFields[i].name, v, lo, hi);
      return buf;
    }
  }
  return "";
}

// Two probes (handoff, peer reads) keep two threads busy, so any runnable task beyond
// usableCores - 2 competed with the measurement for a core. This counts the whole machine's
// tasks against the cores this process may use: under a narrow CPU affinity on a busy machine it
// errs towards "loaded" (measure again later), never towards caching a loaded result.
std::string calibrationLoadedWhy(const CalibrationLoad& load) {
  std::string why;
  char buf[160];
  int room = std::max(load.usableCores, 2) - 2;
  if (load.runnableOthers > room) {
    std::snprintf(buf, sizeof(buf), "%d other runnable task(s) on %d usable core(s)", load.runnableOthers,
                  load.usableCores);
    addReason(&why, buf);
  }
  if (load.maxSpread > kMaxCalibrationSpread) {
    std::snprintf(buf, sizeof(buf), "the repeats of %s spread by %.0f%% (more than %.0f%%)", load.spreadField.c_str(),
                  100 * load.maxSpread, 100 * kMaxCalibrationSpread);
    addReason(&why, buf);
  }
  return why;
}

Calibration measureCalibration() {
  Calibration cal;
  auto t0 = Clock::now();
  cal.pid = getpid();
  cal.measuredAt = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  cal.load.usableCores = static_cast<int>(probes::allowedCpus().size());
  int runnable = 0;
  if (!readLoadavg(&cal.load.loadavg1, &runnable)) cal.load.loadavg1 = -1;
  std::vector<double> others{double(runnableOthers())};
  probes::MemCopy mem;
  std::vector<Probe> all = makeProbes(&mem);
  // Rounds of one repeat of every probe, rather than all repeats of one probe in a row: a burst
  // of load then spoils one repeat of each probe, which the median ignores. The first round runs
  // whatever the setup cost (a slow machine, a sanitizer build): a measurement without one has
  // nothing to give.
  for (; cal.repeats < kCalibrationRepeats && (cal.repeats == 0 || msSince(t0) < kCalibrationBudgetMs); ++cal.repeats) {
    for (Probe& p : all) {
      if (p.unavailable) continue;
      double v = p.run();
      if (v > 0) p.samples.push_back(v);
      p.unavailable = v == 0 && p.mayBeUnavailable;
    }
    others.push_back(runnableOthers());
  }
  cal.load.runnableOthers = static_cast<int>(medianOf(others));  // -1 when /proc/loadavg is unreadable
  for (const Probe& p : all) settle(p, &cal);
  setCacheSize(&cal.constants);
  if (cal.repeats < kCalibrationRepeats)
    addReason(&cal.provisionalWhy, "cut short after " + std::to_string(cal.repeats) + " of " +
                                       std::to_string(kCalibrationRepeats) + " rounds (budget " +
                                       std::to_string(kCalibrationBudgetMs) + " ms)");
  std::string loaded = calibrationLoadedWhy(cal.load);
  if (!loaded.empty()) addReason(&cal.provisionalWhy, "loaded: " + loaded);
  cal.provisional = !cal.provisionalWhy.empty();
  cal.measureMs = msSince(t0);
  WEFT_INFO(kLogTuning, "tuner calibration took %.1f ms: %s", cal.measureMs, describeCalibration(cal).c_str());
  return cal;
}

}  // namespace weft
