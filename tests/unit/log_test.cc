// The logger: NCCL_DEBUG level filtering, NCCL_DEBUG_SUBSYS parsing, NCCL_DEBUG_FILE patterns,
// the line format, the once-only banner, and whole lines under concurrent writers.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/params.h"

namespace {

// The variables these tests set; saved before each test and put back after it.
const char* const kVars[] = {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_BUFFSIZE"};

std::string shortHost() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  std::string h(buf);
  if (h.find('.') != std::string::npos) h.resize(h.find('.'));
  return h;
}

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVars) {
      const char* v = getenv(name);
      if (v != nullptr) saved_[name] = v;
      unsetenv(name);
    }
    char tmpl[] = "/tmp/weft-log-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/log.txt";
    weft::param::reloadForTesting();
  }
  void TearDown() override {
    for (const char* name : kVars) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
    weft::param::reloadForTesting();  // also closes our file
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // Sets NCCL_DEBUG and NCCL_DEBUG_SUBSYS (nullptr = unset) with output to path_.
  void configure(const char* level, const char* subsys = nullptr, bool toFile = true) {
    for (const char* name : kVars) unsetenv(name);
    if (level != nullptr) setenv("NCCL_DEBUG", level, 1);
    if (subsys != nullptr) setenv("NCCL_DEBUG_SUBSYS", subsys, 1);
    if (toFile) setenv("NCCL_DEBUG_FILE", path_.c_str(), 1);
    weft::param::reloadForTesting();
  }
  // Closes the log and returns its lines.
  std::vector<std::string> lines(const std::string& path) {
    weft::logResetForTesting();
    std::vector<std::string> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) out.push_back(line);
    return out;
  }
  std::vector<std::string> lines() { return lines(path_); }

  std::map<std::string, std::string> saved_;
  std::string dir_, path_;
};

using weft::LogLevel;

TEST_F(LogTest, NothingIsPrintedWhenNcclDebugIsUnset) {
  configure(nullptr);
  EXPECT_FALSE(weft::logEnabled(LogLevel::kWarn, weft::kLogAll));
  EXPECT_FALSE(weft::logEnabled(LogLevel::kVersion, weft::kLogAll));
  EXPECT_FALSE(weft::logEnabled(LogLevel::kInfo, weft::kLogInit));
  WEFT_WARN("not shown %d", 1);
  weft::logVersionBanner();
  weft::logResetForTesting();
  struct stat st;
  EXPECT_NE(stat(path_.c_str(), &st), 0) << "a silent logger should not create NCCL_DEBUG_FILE";
}

TEST_F(LogTest, LevelsFilterCumulatively) {
  struct Case {
    const char* level;
    bool version, warn, info, abort, trace;
  };
  const Case cases[] = {
      {"VERSION", true, false, false, false, false}, {"WARN", true, true, false, false, false},
      {"INFO", true, true, true, false, false},      {"ABORT", true, true, true, true, false},
      {"TRACE", true, true, true, true, true},       {"info", true, true, true, false, false},
      {"Trace", true, true, true, true, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.level);
    configure(c.level, nullptr, false);
    EXPECT_EQ(weft::logEnabled(LogLevel::kVersion, weft::kLogAll), c.version);
    EXPECT_EQ(weft::logEnabled(LogLevel::kWarn, weft::kLogAll), c.warn);
    EXPECT_EQ(weft::logEnabled(LogLevel::kInfo, weft::kLogInit), c.info);
    EXPECT_EQ(weft::logEnabled(LogLevel::kAbort, weft::kLogInit), c.abort);
    EXPECT_EQ(weft::logEnabled(LogLevel::kTrace, weft::kLogInit), c.trace);
    EXPECT_FALSE(weft::logEnabled(LogLevel::kNone, weft::kLogAll));
  }
}

TEST_F(LogTest, DefaultSubsystemsAreInitBootstrapEnv) {
  configure("INFO", nullptr, false);
  EXPECT_TRUE(weft::logEnabled(LogLevel::kInfo, weft::kLogInit));
  EXPECT_TRUE(weft::logEnabled(LogLevel::kInfo, weft::kLogBootstrap));
  EXPECT_TRUE(weft::logEnabled(LogLevel::kInfo, weft::kLogEnv));
  EXPECT_FALSE(weft::logEnabled(LogLevel::kInfo, weft::kLogColl));
  EXPECT_FALSE(weft::logEnabled(LogLevel::kInfo, weft::kLogNet));
  // A message in several subsystems shows when any of them is enabled.
  EXPECT_TRUE(weft::logEnabled(LogLevel::kInfo, weft::kLogColl | weft::kLogInit));
}

TEST_F(LogTest, SubsystemListsAndInversion) {
  configure("INFO", "COLL,net", false);
  EXPECT_TRUE(weft::logEnabled(LogLevel::kInfo, weft::kLogColl));
  EXPECT_TRUE(weft::logEnabled(LogLevel::kInfo, weft::kLogNet));
  EXPECT_FALSE(weft::logEnabled(LogLevel::kInfo, weft::kLogInit));

  configure("INFO", " init , P2P ", false);
  EXPECT_TRUE(weft::logEnabled(LogLevel::kInfo, weft::kLogInit));
  EXPECT_TRUE(weft::logEnabled(LogLevel::kInfo, weft::kLogP2P));
  EXPECT_FALSE(weft::logEnabled(LogLevel::kInfo, weft::kLogBootstrap));

  configure("INFO", "^COLL,SHM", false);
  EXPECT_FALSE(weft::logEnabled(LogLevel::kInfo, weft::kLogColl));
  EXPECT_FALSE(weft::logEnabled(LogLevel::kInfo, weft::kLogShm));
  EXPECT_TRUE(weft::logEnabled(LogLevel::kInfo, weft::kLogInit));
  EXPECT_TRUE(weft::logEnabled(LogLevel::kInfo, weft::kLogRas));

  configure("TRACE", "ALL", false);
  for (uint64_t bit = 1; bit <= weft::kLogRas; bit <<= 1) {
    EXPECT_TRUE(weft::logEnabled(LogLevel::kTrace, bit)) << bit;
  }

  // Inverting everything silences INFO and TRACE, but warnings still show.
  configure("TRACE", "^ALL", false);
  EXPECT_FALSE(weft::logEnabled(LogLevel::kInfo, weft::kLogInit));
  EXPECT_FALSE(weft::logEnabled(LogLevel::kTrace, weft::kLogColl));
  EXPECT_TRUE(weft::logEnabled(LogLevel::kWarn, weft::kLogAll));

  const std::pair<const char*, uint64_t> names[] = {{"INIT", weft::kLogInit},
                                                    {"COLL", weft::kLogColl},
                                                    {"P2P", weft::kLogP2P},
                                                    {"SHM", weft::kLogShm},
                                                    {"NET", weft::kLogNet},
                                                    {"GRAPH", weft::kLogGraph},
                                                    {"TUNING", weft::kLogTuning},
                                                    {"ENV", weft::kLogEnv},
                                                    {"ALLOC", weft::kLogAlloc},
                                                    {"CALL", weft::kLogCall},
                                                    {"PROXY", weft::kLogProxy},
                                                    {"NVLS", weft::kLogNvls},
                                                    {"BOOTSTRAP", weft::kLogBootstrap},
                                                    {"REG", weft::kLogReg},
                                                    {"PROFILE", weft::kLogProfile},
                                                    {"RAS", weft::kLogRas}};
  for (const auto& [name, bit] : names) {
    SCOPED_TRACE(name);
    configure("INFO", name, false);
    EXPECT_TRUE(weft::logEnabled(LogLevel::kInfo, bit));
    EXPECT_FALSE(weft::logEnabled(LogLevel::kInfo, ~bit & ((weft::kLogRas << 1) - 1)));
  }
}

TEST_F(LogTest, UnknownSubsystemIsReported) {
  configure("WARN", "COLL,bogus");
  EXPECT_FALSE(weft::logEnabled(LogLevel::kInfo, weft::kLogColl));  // brings the logger up
  std::vector<std::string> out = lines();
  ASSERT_GE(out.size(), 1u);
  EXPECT_NE(out[0].find("unknown subsystem \"bogus\""), std::string::npos) << out[0];
}

TEST_F(LogTest, LineFormat) {
  configure("TRACE", "INIT");
  const std::string prefix = shortHost() + ":" + std::to_string(getpid()) + ":";
  WEFT_INFO(weft::kLogInit, "hello %d", 42);
  int warnLine = __LINE__ + 1;
  WEFT_WARN("careful %s", "now");
  int traceLine = __LINE__ + 1;
  WEFT_TRACE(weft::kLogInit, "step");
  WEFT_INFO(weft::kLogColl, "filtered out");
  WEFT_INFO(weft::kLogInit, "ends with newline\n");
  std::vector<std::string> out = lines();
  ASSERT_EQ(out.size(), 4u);
  const std::regex head("^" + prefix + "[0-9]+ Weft ");
  for (const std::string& l : out) EXPECT_TRUE(std::regex_search(l, head)) << l;
  EXPECT_NE(out[0].find(" Weft INFO hello 42"), std::string::npos) << out[0];
  EXPECT_TRUE(std::regex_match(out[0], std::regex("^" + prefix + "[0-9]+ Weft INFO hello 42$"))) << out[0];
  EXPECT_NE(out[1].find(" Weft WARN log_test.cc:" + std::to_string(warnLine) + " careful now"), std::string::npos)
      << out[1];
  EXPECT_NE(out[2].find(" Weft TRACE log_test.cc:" + std::to_string(traceLine) + " step"), std::string::npos) << out[2];
  EXPECT_NE(out[3].find(" Weft INFO ends with newline"), std::string::npos);
  EXPECT_EQ(out[3].back(), 'e');  // no doubled newline: the next line is not empty
  // The thread id is this thread's kernel id, the same on every line it writes.
  std::string tid0 = out[0].substr(prefix.size(), out[0].find(' ') - prefix.size());
  std::string tid1 = out[1].substr(prefix.size(), out[1].find(' ') - prefix.size());
  EXPECT_EQ(tid0, tid1);
}

TEST_F(LogTest, LongMessagesArePrintedWhole) {
  configure("INFO", "COLL");
  std::string big(5000, 'x');
  WEFT_INFO(weft::kLogColl, "[%s]", big.c_str());
  std::vector<std::string> out = lines();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].find("[" + big + "]"), std::string::npos);
}

TEST_F(LogTest, DebugFileSubstitutesHostAndPid) {
  std::string pattern = dir_ + "/weft.%h.%p.%%.%x.log";
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_FILE", pattern.c_str(), 1);
  weft::param::reloadForTesting();
  WEFT_INFO(weft::kLogInit, "into the file");
  std::string expected = dir_ + "/weft." + shortHost() + "." + std::to_string(getpid()) + ".%.%x.log";
  std::vector<std::string> out = lines(expected);
  ASSERT_EQ(out.size(), 1u) << "expected the log at " << expected;
  EXPECT_NE(out[0].find("into the file"), std::string::npos);
}

TEST_F(LogTest, DebugFileIsTruncatedWhenOpened) {
  {
    std::ofstream old(path_);
    old << "left over from an earlier run\n";
  }
  configure("INFO");
  WEFT_INFO(weft::kLogInit, "fresh");
  std::vector<std::string> out = lines();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].find("fresh"), std::string::npos);
}

TEST_F(LogTest, UnopenableFileFallsBackToStderr) {
  std::string bad = dir_ + "/no/such/dir/log";
  setenv("NCCL_DEBUG", "WARN", 1);
  setenv("NCCL_DEBUG_FILE", bad.c_str(), 1);
  weft::param::reloadForTesting();
  testing::internal::CaptureStderr();
  WEFT_WARN("after the fallback");
  weft::logResetForTesting();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("NCCL_DEBUG_FILE: cannot open \"" + bad + "\""), std::string::npos) << err;
  EXPECT_NE(err.find("logging to stderr instead"), std::string::npos) << err;
  EXPECT_NE(err.find("Weft WARN log_test.cc:"), std::string::npos) << err;
  EXPECT_NE(err.find("after the fallback"), std::string::npos) << err;
}

TEST_F(LogTest, VersionBannerPrintsOnce) {
  configure("VERSION");
  weft::logVersionBanner();
  weft::logVersionBanner();
  WEFT_WARN("a warning is more verbose than VERSION");
  std::vector<std::string> out = lines();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].find(" Weft VERSION Weft "), std::string::npos) << out[0];
  EXPECT_NE(out[0].find("(NCCL API 2.30.7) backend "), std::string::npos) << out[0];
  EXPECT_NE(out[0].find("NCCL version 2.30.7+weft-"), std::string::npos) << out[0];
}

TEST_F(LogTest, ConcurrentWritersProduceWholeLines) {
  configure("INFO", "COLL");
  constexpr int kThreads = 4, kLines = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kLines; ++i)
        WEFT_INFO(weft::kLogColl, "thread %d line %d %s", t, i, "payload-payload-payload");
    });
  }
  for (std::thread& th : threads) th.join();
  std::vector<std::string> out = lines();
  ASSERT_EQ(out.size(), static_cast<size_t>(kThreads * kLines));
  const std::regex whole("^[^ ]+:[0-9]+:[0-9]+ Weft INFO thread [0-9]+ line [0-9]+ payload-payload-payload$");
  for (const std::string& l : out) ASSERT_TRUE(std::regex_match(l, whole)) << l;
}

// The registry's warnings go through the logger once it is up, under the logger's rules.
TEST_F(LogTest, RegistryWarningsAppearAtWarn) {
  setenv("NCCL_DEBUG", "WARN", 1);
  setenv("NCCL_DEBUG_FILE", path_.c_str(), 1);
  setenv("NCCL_BUFFSIZE", "big", 1);
  weft::param::reloadForTesting();
  EXPECT_TRUE(weft::logEnabled(LogLevel::kWarn, weft::kLogAll));  // the logger comes up first
  EXPECT_EQ(weft::param::localAgreed().buffSize, 1048576);
  std::vector<std::string> out = lines();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].find("NCCL_BUFFSIZE=\"big\""), std::string::npos) << out[0];
  EXPECT_NE(out[0].find("using the default 1048576"), std::string::npos) << out[0];
}

}  // namespace
