// The parameter registry: defaults, parsing, aliases, rejected values, thread-safe first use, and
// docs/env.md staying in step with the table.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/params.h"

namespace {

// Every name the registry reads (primaries and aliases).
std::vector<std::string> allNames() {
  std::vector<std::string> names;
  for (const weft::param::ParamView& p : weft::param::list()) {
    names.push_back(p.name);
    std::stringstream aliases(p.aliases);
    std::string a;
    while (std::getline(aliases, a, ',')) {
      if (!a.empty()) names.push_back(a);
    }
  }
  return names;
}

// Each test starts from an environment where none of Weft's variables is set, and the process's
// own environment comes back afterwards (other suites in this binary share it).
class ParamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string& name : allNames()) {
      const char* v = getenv(name.c_str());
      if (v != nullptr) saved_[name] = v;
      unsetenv(name.c_str());
    }
    weft::param::reloadForTesting();
  }
  void TearDown() override {
    for (const std::string& name : allNames()) unsetenv(name.c_str());
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
    weft::param::reloadForTesting();
  }
  // Sets the variables, re-reads, and returns the load's warnings.
  std::vector<std::string> load(const std::map<std::string, std::string>& env) {
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    weft::param::reloadForTesting();
    return weft::param::loadWarnings();
  }
  weft::param::ParamView view(const std::string& name) {
    for (const weft::param::ParamView& p : weft::param::list()) {
      if (p.name == name) return p;
    }
    ADD_FAILURE() << "no parameter " << name;
    return {};
  }

  std::map<std::string, std::string> saved_;
};

bool mentions(const std::vector<std::string>& lines, const std::string& a, const std::string& b = "") {
  for (const std::string& l : lines) {
    if (l.find(a) != std::string::npos && l.find(b) != std::string::npos) return true;
  }
  return false;
}

TEST_F(ParamsTest, DefaultsWhenNothingIsSet) {
  namespace p = weft::param;
  EXPECT_EQ(p::debugLevel(), "");
  EXPECT_EQ(p::debugSubsys(), "");
  EXPECT_EQ(p::debugFile(), "");
  EXPECT_EQ(p::localAgreed().buffSize, 1048576);
  EXPECT_EQ(p::localAgreed().minNChannels, 1);
  EXPECT_EQ(p::localAgreed().maxNChannels, 64);
  EXPECT_EQ(p::localAgreed().nChannels, 2);
  EXPECT_FALSE(p::localAgreed().shmDisable);
  EXPECT_TRUE(p::localAgreed().runtimeConnect);
  EXPECT_EQ(p::commId(), "");
  EXPECT_EQ(p::socketIfname(), "");
  EXPECT_EQ(p::socketFamily(), "");
  EXPECT_EQ(p::hostId(), "");
  EXPECT_EQ(p::commBlocking(), -1);
  EXPECT_EQ(p::device(), "auto");
  EXPECT_EQ(p::timeoutMs(), 300000);
  EXPECT_EQ(p::spinUs(), 100);
  EXPECT_EQ(p::livenessMs(), 200);
  EXPECT_FALSE(p::localAgreed().p2pDisable);
  EXPECT_EQ(p::net(), "");
  EXPECT_EQ(p::netPlugin(), "");
  EXPECT_EQ(p::socketNThreads(), 0);
  EXPECT_EQ(p::nSocksPerThread(), 0);
  EXPECT_EQ(p::localAgreed().algo, "");
  EXPECT_EQ(p::localAgreed().proto, "");
  EXPECT_EQ(p::tunerPlugin(), "");
  EXPECT_EQ(p::topoFile(), "");
  EXPECT_EQ(p::topoDumpFile(), "");
  EXPECT_TRUE(p::loadWarnings().empty());
}

// The documented set, in docs/env.md order; a row added to or dropped from the table shows here.
const std::vector<std::string> kExpectedNames = {"NCCL_DEBUG",
                                                 "NCCL_DEBUG_SUBSYS",
                                                 "NCCL_DEBUG_FILE",
                                                 "WEFT_TRACE_FILE",
                                                 "WEFT_TRACE_MAX_EVENTS",
                                                 "NCCL_PROFILER_PLUGIN",
                                                 "NCCL_BUFFSIZE",
                                                 "WEFT_ONESHOT_MAX_BYTES",
                                                 "WEFT_NCHANNELS",
                                                 "NCCL_MIN_NCHANNELS",
                                                 "NCCL_MAX_NCHANNELS",
                                                 "NCCL_SHM_DISABLE",
                                                 "NCCL_RUNTIME_CONNECT",
                                                 "NCCL_P2P_DISABLE",
                                                 "NCCL_P2P_LEVEL",
                                                 "NCCL_P2P_READ_ENABLE",
                                                 "NCCL_COMM_ID",
                                                 "WEFT_COMM_SECRET",
                                                 "NCCL_SOCKET_IFNAME",
                                                 "NCCL_SOCKET_FAMILY",
                                                 "WEFT_HOST_ID",
                                                 "WEFT_TLS_KEY_FILE",
                                                 "WEFT_TLS_LIBSSL",
                                                 "NCCL_NET",
                                                 "NCCL_NET_PLUGIN",
                                                 "NCCL_SOCKET_NTHREADS",
                                                 "NCCL_NSOCKS_PERTHREAD",
                                                 "WEFT_SOCKET_INLINE_BYTES",
                                                 "WEFT_SOCKET_DELAYED_ACKS",
                                                 "WEFT_NET_LINK_TIMEOUT_MS",
                                                 "NCCL_IB_DISABLE",
                                                 "NCCL_IB_HCA",
                                                 "NCCL_IB_GID_INDEX",
                                                 "NCCL_IB_ROCE_VERSION_NUM",
                                                 "NCCL_IB_ADDR_FAMILY",
                                                 "NCCL_IB_ADDR_RANGE",
                                                 "NCCL_IB_TC",
                                                 "NCCL_IB_SL",
                                                 "NCCL_IB_QPS_PER_CONNECTION",
                                                 "NCCL_IB_SPLIT_DATA_ON_QPS",
                                                 "NCCL_IB_TIMEOUT",
                                                 "NCCL_IB_RETRY_CNT",
                                                 "NCCL_COMM_BLOCKING",
                                                 "WEFT_DEVICE",
                                                 "WEFT_TIMEOUT_MS",
                                                 "WEFT_SPIN_US",
                                                 "WEFT_LIVENESS_MS",
                                                 "WEFT_MISMATCH_CHECK",
                                                 "NCCL_TOPO_FILE",
                                                 "NCCL_TOPO_DUMP_FILE",
                                                 "RCCL_ENABLE_DDA_ALL_REDUCE",
                                                 "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES",
                                                 "RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES",
                                                 "RCCL_DDA_SENDBUF_BYTES",
                                                 "WEFT_DIRECT_BLOCKS",
                                                 "RCCL_ENABLE_DDA_ALL_GATHER",
                                                 "RCCL_DDA_ALL_GATHER_MAX_BYTES",
                                                 "RCCL_ENABLE_DDA_REDUCE_SCATTER",
                                                 "RCCL_DDA_REDUCE_SCATTER_MAX_BYTES",
                                                 "RCCL_ENABLE_DDA_ALL_TO_ALL",
                                                 "RCCL_DDA_ALL_TO_ALL_MAX_BYTES",
                                                 "RCCL_LOW_PRECISION_ENABLE",
                                                 "RCCL_LOW_PRECISION_ENABLE_ALLREDUCE",
                                                 "RCCL_LOW_PRECISION_ENABLE_ALLGATHER",
                                                 "RCCL_LOW_PRECISION_ENABLE_REDUCESCATTER",
                                                 "RCCL_LOW_PRECISION_ENABLE_ALLTOALL",
                                                 "WEFT_LOW_PRECISION_MIN_BYTES",
                                                 "NCCL_ALGO",
                                                 "NCCL_PROTO",
                                                 "RCCL_OVERRIDE_ALGO",
                                                 "RCCL_OVERRIDE_PROTO",
                                                 "NCCL_ENV_PLUGIN",
                                                 "NCCL_TUNER_PLUGIN",
                                                 "WEFT_TUNER_CALIBRATE",
                                                 "WEFT_TUNER_CONSTANTS",
                                                 "WEFT_CACHE_DIR"};

TEST_F(ParamsTest, ListShowsDefaultsAsNotSet) {
  std::vector<weft::param::ParamView> params = weft::param::list();
  std::vector<std::string> names;
  for (const weft::param::ParamView& p : params) names.push_back(p.name);
  EXPECT_EQ(names, kExpectedNames);
  for (const weft::param::ParamView& p : params) {
    SCOPED_TRACE(p.name);
    EXPECT_FALSE(p.set);
    EXPECT_EQ(p.value, p.defaultValue);  // every default is written in canonical form
    EXPECT_EQ(p.source, "");
    EXPECT_EQ(p.problem, "");
  }
}

// Guards the table itself: unique names, the prefixes users expect, one-line docs, known types,
// well-formed ALLOWED columns.
TEST_F(ParamsTest, TableRowsAreWellFormed) {
  std::set<std::string> seen;
  for (const std::string& n : allNames()) {
    EXPECT_TRUE(seen.insert(n).second) << n << " appears twice";
    // XDG_CACHE_HOME is the one standard variable read (as WEFT_CACHE_DIR's alias).
    EXPECT_TRUE(n.rfind("NCCL_", 0) == 0 || n.rfind("WEFT_", 0) == 0 || n.rfind("RCCL_", 0) == 0 ||
                n == "XDG_CACHE_HOME")
        << n;
  }
  for (const weft::param::ParamView& p : weft::param::list()) {
    SCOPED_TRACE(p.name);
    EXPECT_FALSE(p.doc.empty());
    EXPECT_EQ(p.doc.find('\n'), std::string::npos);
    EXPECT_FALSE(p.group.empty());
    EXPECT_TRUE(p.type == "int" || p.type == "size" || p.type == "bool" || p.type == "string");
    if (p.type == "int" || p.type == "size") {
      if (!p.allowed.empty()) {
        EXPECT_NE(p.allowed.find(".."), std::string::npos);
      }
    } else if (p.type == "bool") {
      EXPECT_EQ(p.allowed, "");
    } else {
      EXPECT_EQ(p.allowed.find(".."), std::string::npos);
    }
  }
}

TEST_F(ParamsTest, EnvironmentOverridesDefaults) {
  EXPECT_TRUE(load({{"NCCL_BUFFSIZE", "65536"},
                    {"WEFT_TIMEOUT_MS", "0x10"},
                    {"NCCL_SHM_DISABLE", "1"},
                    {"NCCL_RUNTIME_CONNECT", "0"},
                    {"NCCL_COMM_ID", "10.0.0.1:1234"},
                    {"WEFT_DEVICE", "HOST"},
                    {"NCCL_SOCKET_FAMILY", "af_inet6"},
                    {"NCCL_DEBUG", "info"},
                    {"NCCL_COMM_BLOCKING", "0"},
                    {"WEFT_SPIN_US", "0"}})
                  .empty());
  namespace p = weft::param;
  EXPECT_EQ(p::localAgreed().buffSize, 65536);
  EXPECT_EQ(p::timeoutMs(), 16);
  EXPECT_TRUE(p::localAgreed().shmDisable);
  EXPECT_FALSE(p::localAgreed().runtimeConnect);
  EXPECT_EQ(p::commId(), "10.0.0.1:1234");
  EXPECT_EQ(p::device(), "host");  // the table's spelling
  EXPECT_EQ(p::socketFamily(), "AF_INET6");
  EXPECT_EQ(p::debugLevel(), "INFO");
  EXPECT_EQ(p::commBlocking(), 0);
  EXPECT_EQ(p::spinUs(), 0);

  weft::param::ParamView v = view("WEFT_TIMEOUT_MS");
  EXPECT_TRUE(v.set);
  EXPECT_EQ(v.value, "16");
  EXPECT_EQ(v.source, "WEFT_TIMEOUT_MS");
  EXPECT_EQ(v.envText, "0x10");
  EXPECT_EQ(v.problem, "");
}

TEST_F(ParamsTest, ValuesAreCachedUntilReload) {
  load({{"NCCL_BUFFSIZE", "4096"}});
  EXPECT_EQ(weft::param::localAgreed().buffSize, 4096);
  setenv("NCCL_BUFFSIZE", "8192", 1);
  EXPECT_EQ(weft::param::localAgreed().buffSize, 4096);  // read once
  weft::param::reloadForTesting();
  EXPECT_EQ(weft::param::localAgreed().buffSize, 8192);
}

TEST_F(ParamsTest, IntegersAreDecimalOrHex) {
  const std::vector<std::pair<std::string, int64_t>> good = {{"8", 8},     {"0x20", 32}, {"0X1f", 31}, {"010", 10},
                                                             {" 12 ", 12}, {"+3", 3},    {"64", 64}};
  for (const auto& [text, expected] : good) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(load({{"NCCL_MAX_NCHANNELS", text}}).empty());
    EXPECT_EQ(weft::param::localAgreed().maxNChannels, expected);
  }
}

TEST_F(ParamsTest, SizesAcceptSuffixes) {
  const std::vector<std::pair<std::string, int64_t>> good = {{"4096", 4096},
                                                             {"4K", 4096},
                                                             {"4k", 4096},
                                                             {"2M", 2 << 20},
                                                             {"1G", int64_t{1} << 30},
                                                             {"3g", int64_t{3} << 30},
                                                             {"0x10K", 16 << 10},
                                                             {" 8M ", 8 << 20},
                                                             {"8388608G", int64_t{1} << 53}};
  for (const auto& [text, expected] : good) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(load({{"NCCL_BUFFSIZE", text}}).empty());
    EXPECT_EQ(weft::param::localAgreed().buffSize, expected);
  }
}

TEST_F(ParamsTest, MalformedValuesFallBackWithAWarning) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"NCCL_BUFFSIZE", "abc"},      {"NCCL_BUFFSIZE", "1T"},          {"NCCL_BUFFSIZE", "4KB"},
      {"NCCL_BUFFSIZE", "K"},        {"NCCL_BUFFSIZE", "0x"},          {"NCCL_BUFFSIZE", "-4K"},
      {"NCCL_BUFFSIZE", "0"},        {"NCCL_BUFFSIZE", "9999999999G"}, {"NCCL_BUFFSIZE", "99999999999999999999"},
      {"WEFT_TIMEOUT_MS", "5K"},     {"WEFT_TIMEOUT_MS", "1.5"},       {"WEFT_TIMEOUT_MS", "0"},
      {"NCCL_MAX_NCHANNELS", "65"},  {"NCCL_MIN_NCHANNELS", "0"},      {"NCCL_COMM_BLOCKING", "2"},
      {"NCCL_SHM_DISABLE", "maybe"}, {"WEFT_DEVICE", "gpu"},           {"NCCL_SOCKET_FAMILY", "AF_UNIX"},
      {"NCCL_DEBUG", "LOUD"},        {"WEFT_LIVENESS_MS", "0"}};
  for (const auto& [name, text] : bad) {
    SCOPED_TRACE(name + "=" + text);
    std::vector<std::string> warnings = load({{name, text}});
    ASSERT_EQ(warnings.size(), 1u);
    weft::param::ParamView v = view(name);
    EXPECT_TRUE(v.set);
    EXPECT_NE(v.problem, "");
    EXPECT_EQ(v.value, v.defaultValue);
    // The warning names the variable, the rejected text and the default used instead.
    EXPECT_NE(warnings[0].find(name + "=\"" + text + "\""), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("using the default " +
                               (v.type == "string" ? "\"" + v.defaultValue + "\"" : v.defaultValue)),
              std::string::npos)
        << warnings[0];
    unsetenv(name.c_str());
  }
  load({{"NCCL_BUFFSIZE", "lots"}});
  EXPECT_EQ(weft::param::localAgreed().buffSize, 1048576);
}

TEST_F(ParamsTest, BooleansAcceptNumbersAndWords) {
  for (const char* t : {"1", "2", "true", "YES", "On", "0x1"}) {
    SCOPED_TRACE(t);
    EXPECT_TRUE(load({{"NCCL_SHM_DISABLE", t}}).empty());
    EXPECT_TRUE(weft::param::localAgreed().shmDisable);
    EXPECT_EQ(view("NCCL_SHM_DISABLE").value, "1");
  }
  for (const char* t : {"0", "false", "No", "OFF"}) {
    SCOPED_TRACE(t);
    EXPECT_TRUE(load({{"RCCL_ENABLE_DDA_ALL_TO_ALL", t}}).empty());
    EXPECT_FALSE(weft::param::localAgreed().ddaAllToAll);
  }
}

TEST_F(ParamsTest, NegativeIntegersWhereAllowed) {
  EXPECT_TRUE(load({{"NCCL_COMM_BLOCKING", "-1"}}).empty());
  EXPECT_EQ(weft::param::commBlocking(), -1);
  EXPECT_TRUE(view("NCCL_COMM_BLOCKING").set);
  EXPECT_TRUE(load({{"NCCL_COMM_BLOCKING", "1"}}).empty());
  EXPECT_EQ(weft::param::commBlocking(), 1);
}

TEST_F(ParamsTest, EmptyValueCountsAsUnset) {
  EXPECT_TRUE(load({{"NCCL_BUFFSIZE", ""}, {"WEFT_DEVICE", ""}}).empty());
  EXPECT_EQ(weft::param::localAgreed().buffSize, 1048576);
  EXPECT_EQ(weft::param::device(), "auto");
  EXPECT_FALSE(view("NCCL_BUFFSIZE").set);
}

TEST_F(ParamsTest, AliasIsReadWhenThePrimaryIsUnset) {
  EXPECT_TRUE(load({{"NCCL_MIN_CTAS", "4"}, {"NCCL_MAX_CTAS", "8"}}).empty());
  EXPECT_EQ(weft::param::localAgreed().minNChannels, 4);
  EXPECT_EQ(weft::param::localAgreed().maxNChannels, 8);
  weft::param::ParamView v = view("NCCL_MIN_NCHANNELS");
  EXPECT_TRUE(v.set);
  EXPECT_EQ(v.source, "NCCL_MIN_CTAS");
  EXPECT_EQ(v.aliases, "NCCL_MIN_CTAS");
  EXPECT_EQ(view("NCCL_MAX_NCHANNELS").aliases, "NCCL_MAX_CTAS");
}

TEST_F(ParamsTest, PrimaryNameWinsOverAlias) {
  std::vector<std::string> warnings = load({{"NCCL_MAX_NCHANNELS", "16"}, {"NCCL_MAX_CTAS", "8"}});
  EXPECT_EQ(weft::param::localAgreed().maxNChannels, 16);
  EXPECT_EQ(view("NCCL_MAX_NCHANNELS").source, "NCCL_MAX_NCHANNELS");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(mentions(warnings, "NCCL_MAX_CTAS=\"8\" is ignored", "NCCL_MAX_NCHANNELS"));

  // The same value under both names is not worth a warning.
  EXPECT_TRUE(load({{"NCCL_MAX_NCHANNELS", "8"}, {"NCCL_MAX_CTAS", "8"}}).empty());
  // An empty primary is unset, so the alias counts.
  EXPECT_TRUE(load({{"NCCL_MIN_NCHANNELS", ""}, {"NCCL_MIN_CTAS", "3"}}).empty());
  EXPECT_EQ(weft::param::localAgreed().minNChannels, 3);
  // A system variable that serves as a fallback (XDG_CACHE_HOME) may differ without a warning:
  // desktops set it for every program. The primary still wins.
  EXPECT_TRUE(load({{"WEFT_CACHE_DIR", "/tmp/a"}, {"XDG_CACHE_HOME", "/tmp/b"}}).empty());
  EXPECT_EQ(weft::param::cacheDir(), "/tmp/a");
}

TEST_F(ParamsTest, RejectedAliasNamesBothNames) {
  std::vector<std::string> warnings = load({{"NCCL_MIN_CTAS", "many"}});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(mentions(warnings, "NCCL_MIN_CTAS (alias of NCCL_MIN_NCHANNELS)=\"many\"", "default 1"));
  EXPECT_EQ(weft::param::localAgreed().minNChannels, 1);
}

// A rejected value is printed once through the logger (at WARN), however often it is read.
TEST_F(ParamsTest, WarningIsLoggedOnce) {
  char dir[] = "/tmp/weft-params-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/log";
  load({{"NCCL_DEBUG", "WARN"}, {"NCCL_DEBUG_FILE", path}, {"WEFT_SPIN_US", "fast"}});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(weft::param::spinUs(), 100);
  weft::param::list();
  weft::logResetForTesting();  // closes the file
  std::ifstream in(path);
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    if (line.find("WEFT_SPIN_US=\"fast\"") != std::string::npos) {
      ++count;
      EXPECT_NE(line.find(" Weft WARN "), std::string::npos) << line;
      EXPECT_NE(line.find("using the default 100"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(count, 1);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// Many threads hitting the registry first at once all see one consistent reading.
TEST_F(ParamsTest, ConcurrentFirstUseIsConsistent) {
  for (int round = 0; round < 20; ++round) {
    load({{"NCCL_BUFFSIZE", "2M"}, {"WEFT_DEVICE", "host"}, {"NCCL_MAX_CTAS", "7"}});
    std::vector<std::thread> threads;
    std::vector<int> ok(8, 0);
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([t, &ok] {
        ok[t] = weft::param::localAgreed().buffSize == (2 << 20) && weft::param::device() == "host" &&
                weft::param::localAgreed().maxNChannels == 7 && weft::param::list().size() == kExpectedNames.size();
      });
    }
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < 8; ++t) EXPECT_TRUE(ok[t]) << "thread " << t << " round " << round;
  }
}

TEST_F(ParamsTest, DocsEnvMdIsUpToDate) {
  std::string path = std::string(WEFT_SOURCE_DIR) + "/docs/env.md";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_TRUE(committed.str() == weft::param::renderMarkdown())
      << "docs/env.md is out of date with src/base/param_table.h; regenerate it with "
         "`cmake --build <build> --target weft-env-docs` or "
         "`<build>/tools/weft-info --markdown -o docs/env.md`";
}

TEST_F(ParamsTest, MarkdownListsEveryParameter) {
  std::string md = weft::param::renderMarkdown();
  EXPECT_EQ(md.rfind("# Weft environment variables\n", 0), 0u);
  EXPECT_NE(md.find("Generated by `weft-info --markdown`"), std::string::npos);
  for (const weft::param::ParamView& p : weft::param::list()) {
    EXPECT_NE(md.find("| `" + p.name + "` |"), std::string::npos) << p.name;
  }
  // The environment does not leak into the generated file.
  load({{"NCCL_BUFFSIZE", "4K"}, {"NCCL_DEBUG", "INFO"}});
  EXPECT_EQ(weft::param::renderMarkdown(), md);
}

}  // namespace
