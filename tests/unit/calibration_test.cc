// Calibration that is right the first time: one process per host measures while the others wait
// for its result (real processes, real files, a real flock); a lock held too long or left by a
// killed process; loaded and implausible measurements; the median; the cache file's format.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "tuner_env.h"
#include "tuning/calibration.h"
#include "tuning/calibration_probes.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// An empty directory of its own, removed with what the test left in it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/weft-calib-test.XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A forked process that runs `body` once the gate opens and sends back the text it returns.
struct Child {
  pid_t pid = -1;
  int out = -1;
};

// gate: a pipe; the children wait until the parent closes its write end.
Child spawn(const int gate[2], const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    close(gate[1]);
    char c;
    (void)!read(gate[0], &c, 1);  // returns 0 when the parent closes the gate: every child starts at once
    std::string text = body();
    (void)!write(fds[1], text.data(), text.size());
    _exit(0);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

// The child's text; a child still running at the deadline is killed and *ok cleared.
std::string collect(const Child& c, Clock::time_point deadline, bool* ok) {
  std::string text;
  char buf[4096];
  for (;;) {
    int leftMs = std::max(0,
                          int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
    pollfd p{c.out, POLLIN, 0};
    if (poll(&p, 1, leftMs) <= 0) {
      *ok = false;
      kill(c.pid, SIGKILL);
      break;
    }
    ssize_t n = read(c.out, buf, sizeof(buf));
    if (n <= 0) break;
    text.append(buf, size_t(n));
  }
  close(c.out);
  int status = 0;
  waitpid(c.pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) *ok = false;
  return text;
}

// Runs `n` children at once on whatever environment the caller set; their texts, in order.
std::vector<std::string> runAtOnce(int n, const std::function<std::string()>& body, int deadlineMs) {
  int gate[2];
  EXPECT_EQ(pipe(gate), 0);
  std::vector<Child> kids;
  for (int i = 0; i < n; ++i) kids.push_back(spawn(gate, body));
  close(gate[0]);
  close(gate[1]);
  auto deadline = Clock::now() + std::chrono::milliseconds(deadlineMs);
  std::vector<std::string> texts;
  for (const Child& c : kids) {
    bool ok = c.pid > 0;
    texts.push_back(collect(c, deadline, &ok));
    EXPECT_TRUE(ok) << "child " << c.pid << " failed or outlived its deadline; it said: " << texts.back();
  }
  return texts;
}

std::string sourceAndConstants() { return hostConstantsSource() + "\n" + formatHostConstants(hostConstants()); }

TEST(Calibration, ConcurrentProcessesMeasureOnceAndShareTheResult) {
  TempDir dir;
  ScopedEnv env({{"WEFT_CACHE_DIR", dir.path()}, {"WEFT_TUNER_CALIBRATE", "auto"}, {"WEFT_TUNER_CONSTANTS", ""}});
  const std::string path = calibrationCachePath();
  constexpr int kProcs = 6;
  std::vector<std::string> texts = runAtOnce(kProcs, sourceAndConstants, 30000);
  int measured = 0, loaded = 0;
  std::string measuredConstants;
  for (const std::string& t : texts) {
    std::string source = t.substr(0, t.find('\n')), constants = t.substr(t.find('\n') + 1);
    if (startsWith(source, "measured, saved to " + path)) {
      ++measured;
      measuredConstants = constants;
    } else if (startsWith(source, "cache " + path)) {
      ++loaded;
    }
  }
  std::string all;
  for (const std::string& t : texts) all += "  " + t + "\n";
  EXPECT_EQ(measured, 1) << all;
  EXPECT_EQ(loaded, kProcs - 1) << all;
  for (const std::string& t : texts) EXPECT_EQ(t.substr(t.find('\n') + 1), measuredConstants) << all;
  Calibration cal;
  std::string why;
  EXPECT_TRUE(loadCalibration(path, &cal, &why)) << why;
}

TEST(Calibration, HeldLockMakesTheWaiterUseTheDefaultsWithinItsBound) {
  TempDir dir;
  ScopedEnv env({{"WEFT_CACHE_DIR", dir.path()}, {"WEFT_TUNER_CALIBRATE", "auto"}, {"WEFT_TUNER_CONSTANTS", ""}});
  const std::string lockPath = calibrationLockPath(calibrationCachePath());
  std::filesystem::create_directories(std::filesystem::path(lockPath).parent_path());
  // Another process holds the lock for longer than anyone waits.
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  Child holder = spawn(gate, [&] {
    int fd = open(lockPath.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) return std::string("cannot lock");
    std::this_thread::sleep_for(std::chrono::milliseconds(kWaitForMeasurerMs + 3000));
    return std::string("held");
  });
  close(gate[0]);
  close(gate[1]);
  // Until the holder has the lock, this process could take it itself.
  for (auto t0 = Clock::now(); msSince(t0) < 5000; std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
    int fd = open(lockPath.c_str(), O_RDWR);
    bool held = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0;
    if (fd >= 0) close(fd);
    if (held) break;
  }
  auto t0 = Clock::now();
  std::string source = hostConstantsSource();
  double waitedMs = msSince(t0);
  kill(holder.pid, SIGKILL);
  bool ok = true;
  collect(holder, Clock::now() + std::chrono::seconds(5), &ok);
  EXPECT_TRUE(startsWith(source, "defaults (")) << source;
  EXPECT_NE(source.find(lockPath), std::string::npos) << source;
  EXPECT_GE(waitedMs, kWaitForMeasurerMs);
  EXPECT_LT(waitedMs, kWaitForMeasurerMs + 1500);
  EXPECT_EQ(formatHostConstants(hostConstants()), formatHostConstants(HostConstants{}));
}

TEST(Calibration, LockOfAKilledProcessBlocksNoOne) {
  TempDir dir;
  ScopedEnv env({{"WEFT_CACHE_DIR", dir.path()}, {"WEFT_TUNER_CALIBRATE", "auto"}, {"WEFT_TUNER_CONSTANTS", ""}});
  const std::string lockPath = calibrationLockPath(calibrationCachePath());
  std::filesystem::create_directories(std::filesystem::path(lockPath).parent_path());
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(lockPath.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd >= 0 && flock(fd, LOCK_EX) == 0) raise(SIGKILL);  // dies holding the lock
    _exit(1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the lock holder did not die as planned";
  ASSERT_TRUE(std::filesystem::exists(lockPath));  // the file stays; its lock went with the process
  auto t0 = Clock::now();
  EXPECT_TRUE(startsWith(hostConstantsSource(), "measured, saved to")) << hostConstantsSource();
  EXPECT_LT(msSince(t0), kWaitForMeasurerMs);
}

// Busy threads, one more than the cores this process may use, for as long as the object lives.
class Spinners {
 public:
  Spinners() {
    int n = int(probes::allowedCpus().size()) + 1;
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this] {
        while (!stop_.load(std::memory_order_relaxed)) {
        }
      });
  }
  ~Spinners() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

TEST(Calibration, LoadedMeasurementIsProvisionalAndMeasuredAgainLater) {
  TempDir dir;
  ScopedEnv env({{"WEFT_CACHE_DIR", dir.path()}, {"WEFT_TUNER_CALIBRATE", "auto"}, {"WEFT_TUNER_CONSTANTS", ""}});
  const std::string path = calibrationCachePath();
  std::string source;
  {
    Spinners load;
    source = hostConstantsSource();
  }
  EXPECT_NE(source.find("as provisional"), std::string::npos) << source;
  Calibration cal;
  std::string why;
  ASSERT_TRUE(loadCalibration(path, &cal, &why)) << why;
  EXPECT_TRUE(cal.provisional);
  EXPECT_NE(cal.provisionalWhy.find("other runnable task"), std::string::npos) << cal.provisionalWhy;
  EXPECT_GT(cal.load.runnableOthers, cal.load.usableCores - 2);
  EXPECT_GT(cal.measuredAt, 0);
  // Within kProvisionalReuseS a new process reuses it (the ranks of one job)...
  calibrationResetForTesting();
  EXPECT_TRUE(startsWith(hostConstantsSource(), "cache " + path + " (provisional")) << hostConstantsSource();
  // ...after that, the next process measures again.
  cal.measuredAt -= 2 * kProvisionalReuseS;
  ASSERT_TRUE(saveCalibration(path, cal, &why)) << why;
  calibrationResetForTesting();
  EXPECT_TRUE(startsWith(hostConstantsSource(), "measured")) << hostConstantsSource();
}

TEST(Calibration, ImplausibleCacheFileIsRejected) {
  TempDir dir;
  ScopedEnv env({{"WEFT_CACHE_DIR", dir.path()}, {"WEFT_TUNER_CALIBRATE", "auto"}, {"WEFT_TUNER_CONSTANTS", ""}});
  const std::string path = calibrationCachePath();
  Calibration cal;
  cal.measuredAt = 1e9;
  cal.constants.copyGBps = 0.05;  // below 0.1 GB/s: a copy measured while descheduled
  std::string why;
  ASSERT_TRUE(saveCalibration(path, cal, &why)) << why;
  Calibration back;
  EXPECT_FALSE(loadCalibration(path, &back, &why));
  EXPECT_NE(why.find("copyGBps"), std::string::npos) << why;
  cal.constants.copyGBps = 8;
  cal.constants.handoffUs = 5000;  // above 1 ms
  ASSERT_TRUE(saveCalibration(path, cal, &why)) << why;
  EXPECT_FALSE(loadCalibration(path, &back, &why));
  EXPECT_NE(why.find("handoffUs"), std::string::npos) << why;
  // A process finding it measures instead.
  EXPECT_TRUE(startsWith(hostConstantsSource(), "measured, saved to " + path)) << hostConstantsSource();
  EXPECT_NE(hostConstants().handoffUs, 5000);
}

TEST(Calibration, FileRoundTripAndOldFormatsAreIgnored) {
  TempDir dir;
  ScopedEnv env({{"WEFT_CACHE_DIR", dir.path()}});
  const std::string path = calibrationCachePath();
  EXPECT_NE(path.find("/weft/calibration-v4-"), std::string::npos) << path;
  EXPECT_EQ(calibrationLockPath(path), path.substr(0, path.size() - 4) + ".lock");
  Calibration cal;
  cal.constants.copyGBps = 12.5;
  cal.constants.handoffUs = 0.33;
  cal.measuredAt = 1763900000.25;
  cal.pid = 4242;
  cal.provisional = true;
  cal.provisionalWhy = "loaded: 3 other runnable task(s) on 2 usable core(s)";
  cal.load = {1.5, 3, 2, 0.2, "handoffUs"};
  std::string why;
  ASSERT_TRUE(saveCalibration(path, cal, &why)) << why;
  Calibration back;
  ASSERT_TRUE(loadCalibration(path, &back, &why)) << why;
  EXPECT_DOUBLE_EQ(back.constants.copyGBps, 12.5);
  EXPECT_DOUBLE_EQ(back.constants.handoffUs, 0.33);
  EXPECT_NEAR(back.measuredAt, cal.measuredAt, 1e-3);
  EXPECT_EQ(back.pid, 4242);
  EXPECT_TRUE(back.provisional);
  EXPECT_EQ(back.provisionalWhy, cal.provisionalWhy);
  EXPECT_EQ(back.load.runnableOthers, 3);
  EXPECT_EQ(back.load.spreadField, "handoffUs");
  // What version 2 wrote: the header of another version, and no state or time.
  std::ostringstream v2;
  v2 << "weft-tuner-calibration 1\ncpu x\n";
  for (int i = 0; i < kNumConstantFields; ++i) v2 << kConstantFields[i].name << " 1\n";
  { std::ofstream(path) << v2.str(); }
  EXPECT_FALSE(loadCalibration(path, &back, &why));
  EXPECT_NE(why.find("weft-tuner-calibration 4"), std::string::npos) << why;
  { std::ofstream(path) << "weft-tuner-calibration 4\nstate final\nmeasured_at 5\ncopyGBps -3\n"; }
  EXPECT_FALSE(loadCalibration(path, &back, &why));
  EXPECT_FALSE(loadCalibration(path + ".missing", &back, &why));
}

// The reader's integer fields (repeats, measured_by_pid, runnable_others, usable_cores) are read as
// numbers; one beyond int's range was converted regardless (undefined behaviour: the fuzz target
// calibration_file found "repeats 56666666666666666666"). Such a file is now refused.
TEST(Calibration, IntegerFieldOutOfRangeIsRefused) {
  std::ostringstream text;
  text << "weft-tuner-calibration 4\nstate final\nmeasured_at 1795000000\n";
  for (int i = 0; i < kNumConstantFields; ++i)
    text << kConstantFields[i].name << " " << HostConstants().*kConstantFields[i].field << "\n";
  Calibration cal;
  std::string why;
  ASSERT_TRUE(parseCalibration(text.str() + "repeats 5\n", "c.txt", &cal, &why)) << why;
  EXPECT_EQ(cal.repeats, 5);
  for (const char* line :
       {"repeats 56666666666666666666", "measured_by_pid -1e300", "runnable_others 3e9", "usable_cores 2147483648"}) {
    EXPECT_FALSE(parseCalibration(text.str() + line + "\n", "c.txt", &cal, &why)) << line;
    EXPECT_NE(why.find("out of range"), std::string::npos) << why;
  }
}

// A measured_at far in the future was accepted, and describing it converted it to time_t
// (undefined behaviour: the fuzz target calibration_file found "measured_at 1.7e62"). The reader
// refuses it; describeCalibration prints such a time as unknown.
TEST(Calibration, MeasuredAtBeyondAnyTimeIsRefused) {
  std::ostringstream text;
  text << "weft-tuner-calibration 4\nstate final\n";
  for (int i = 0; i < kNumConstantFields; ++i)
    text << kConstantFields[i].name << " " << HostConstants().*kConstantFields[i].field << "\n";
  Calibration cal;
  std::string why;
  ASSERT_TRUE(parseCalibration(text.str() + "measured_at 1795000000.5\n", "c.txt", &cal, &why)) << why;
  EXPECT_FALSE(parseCalibration(text.str() + "measured_at 1.7e62\n", "c.txt", &cal, &why));
  EXPECT_NE(why.find("measured_at"), std::string::npos) << why;
  cal.measuredAt = 1.7e62;
  EXPECT_NE(describeCalibration(cal).find("at an unknown time"), std::string::npos) << describeCalibration(cal);
}

TEST(Calibration, MedianIgnoresOneOutlierRepeat) {
  // Four repeats near 10 GB/s and one taken while descheduled.
  std::vector<double> repeats{10.1, 0.02, 9.9, 10.0, 10.2};
  EXPECT_DOUBLE_EQ(medianOf(repeats), 10.0);
  EXPECT_LT(spreadOf(repeats), 0.05);
  // Two bad repeats of five are noise the spread rule must see.
  std::vector<double> noisy{10.1, 0.02, 9.9, 3.0, 10.2};
  EXPECT_GT(spreadOf(noisy), kMaxCalibrationSpread);
  EXPECT_DOUBLE_EQ(medianOf({4.0, 2.0}), 3.0);
}

TEST(Calibration, LoadRule) {
  CalibrationLoad quiet{0.3, 0, 2, 0.1, "handoffUs"};
  EXPECT_EQ(calibrationLoadedWhy(quiet), "");
  CalibrationLoad busy = quiet;
  busy.runnableOthers = 1;  // with two probe threads on two cores, one more task had to share a core
  EXPECT_NE(calibrationLoadedWhy(busy).find("1 other runnable task(s) on 2 usable core(s)"), std::string::npos);
  CalibrationLoad big{20, 14, 16, 0.1, "copyGBps"};
  EXPECT_EQ(calibrationLoadedWhy(big), "");
  big.runnableOthers = 15;
  EXPECT_NE(calibrationLoadedWhy(big), "");
  CalibrationLoad spread = quiet;
  spread.maxSpread = 0.8;
  EXPECT_NE(calibrationLoadedWhy(spread).find("handoffUs"), std::string::npos);
}

// What a user's process may spend measuring: 250-300 ms on a quiet 2-core VM. A sanitizer build
// pays far more for the probes' setup alone (MemCopy fills 128 MiB, and the sanitizer its shadow
// of them): 1.1 s quiet and 1.7 s loaded under ThreadSanitizer on the same VM.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr double kMeasureBoundMs = 6000;
#else
constexpr double kMeasureBoundMs = 1500;
#endif

TEST(Calibration, MeasurementIsBoundedAndPlausible) {
  auto t0 = Clock::now();
  Calibration cal = measureCalibration();
  double ms = msSince(t0);
  EXPECT_LT(ms, kMeasureBoundMs) << describeCalibration(cal);
  EXPECT_EQ(implausibleConstant(cal.constants), "");
  EXPECT_GE(cal.repeats, 1);
  EXPECT_GT(cal.load.usableCores, 0);
  EXPECT_EQ(cal.provisional, !cal.provisionalWhy.empty());
}

TEST(Calibration, ModesOffAutoRedo) {
  TempDir dir;
  {
    // WEFT_TUNER_CONSTANTS is agreed per communicator and applied to the combined constants
    // (agreed_constants.h), never to this host's contribution.
    ScopedEnv env(
        {{"WEFT_TUNER_CALIBRATE", "off"}, {"WEFT_CACHE_DIR", dir.path()}, {"WEFT_TUNER_CONSTANTS", "netLatUs=7"}});
    EXPECT_DOUBLE_EQ(hostConstants().copyGBps, HostConstants{}.copyGBps);
    EXPECT_DOUBLE_EQ(hostConstants().netLatUs, HostConstants{}.netLatUs);
    EXPECT_EQ(hostConstantsSource(), "defaults");
    Calibration none;
    EXPECT_FALSE(hostCalibrationRecord(&none));
  }
  std::string path;
  {
    ScopedEnv env({{"WEFT_TUNER_CALIBRATE", "auto"}, {"WEFT_CACHE_DIR", dir.path()}, {"WEFT_TUNER_CONSTANTS", ""}});
    path = calibrationCachePath();
    EXPECT_TRUE(startsWith(path, dir.path() + "/weft/calibration-")) << path;
    EXPECT_TRUE(startsWith(hostConstantsSource(), "measured")) << hostConstantsSource();
    Calibration cached;
    std::string why;
    ASSERT_TRUE(loadCalibration(path, &cached, &why)) << why;
    // A changed cache is what the next process reads.
    cached.constants.copyGBps = 123.4;
    ASSERT_TRUE(saveCalibration(path, cached, &why)) << why;
    calibrationResetForTesting();
    EXPECT_DOUBLE_EQ(hostConstants().copyGBps, 123.4);
    EXPECT_TRUE(startsWith(hostConstantsSource(), "cache " + path)) << hostConstantsSource();
    Calibration record;
    ASSERT_TRUE(hostCalibrationRecord(&record));
    EXPECT_EQ(record.pid, cached.pid);
  }
  {
    ScopedEnv env({{"WEFT_TUNER_CALIBRATE", "redo"}, {"WEFT_CACHE_DIR", dir.path()}, {"WEFT_TUNER_CONSTANTS", ""}});
    EXPECT_TRUE(startsWith(hostConstantsSource(), "measured, saved to " + path)) << hostConstantsSource();
    Calibration cached;
    std::string why;
    ASSERT_TRUE(loadCalibration(path, &cached, &why)) << why;
    EXPECT_NE(cached.constants.copyGBps, 123.4);  // rewritten by the new measurement
  }
}

}  // namespace
}  // namespace weft
