// Agreement at init, the parts that need no communicator: the Agreed parameters' wire form and
// the differences that become warnings, the rule that combines every host's machine constants, and
// the rule that code which chooses how a collective runs reads no per-rank parameter.
#include <gtest/gtest.h>

#include <dirent.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "base/params.h"
#include "tuner_env.h"
#include "tuning/agreed_constants.h"

namespace weft {
namespace {

TEST(AgreedParams, RoundTripThroughTheWireForm) {
  ScopedEnv env({{"NCCL_ALGO", "ring;allreduce:tree"},
                 {"NCCL_BUFFSIZE", "64K"},
                 {"RCCL_ENABLE_DDA_ALL_REDUCE", "off"},
                 {"WEFT_TUNER_CONSTANTS", "copyGBps=3"}});
  const param::Agreed a = param::localAgreed();
  EXPECT_EQ(a.algo, "ring;allreduce:tree");
  EXPECT_EQ(a.buffSize, 65536);
  EXPECT_FALSE(a.ddaAllReduce);
  EXPECT_EQ(a.tunerConstants, "copyGBps=3");
  param::Agreed b;
  std::string why;
  ASSERT_TRUE(param::decodeAgreed(param::encodeAgreed(a), &b, &why)) << why;
  EXPECT_TRUE(param::agreedDifferences(a, b).empty());
  EXPECT_EQ(b.buffSize, 65536);
  EXPECT_EQ(b.algo, "ring;allreduce:tree");
}

TEST(AgreedParams, DifferencesNameTheVariableAndBothValues) {
  param::Agreed inForce;
  {
    ScopedEnv env({{"NCCL_ALGO", "tree"}});
    inForce = param::localAgreed();
  }
  const param::Agreed mine = param::localAgreed();
  const std::vector<param::AgreedDifference> d = param::agreedDifferences(mine, inForce);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "NCCL_ALGO");
  EXPECT_EQ(d[0].mine, "");
  EXPECT_EQ(d[0].inForce, "tree");
}

TEST(AgreedParams, DecodeRejectsMissingAndInvalidValues) {
  const std::string blob = param::encodeAgreed(param::localAgreed());
  param::Agreed out;
  std::string why;
  // Without its last name-value pair, as from a Weft that does not have that parameter.
  std::vector<std::string> tokens;
  for (size_t at = 0; at < blob.size(); at = blob.find('\0', at) + 1)
    tokens.push_back(blob.substr(at, blob.find('\0', at) - at));
  ASSERT_GE(tokens.size(), 2u);
  std::string shorter;
  for (size_t i = 0; i + 2 < tokens.size(); ++i) shorter += tokens[i] + '\0';
  EXPECT_FALSE(param::decodeAgreed(shorter, &out, &why));
  EXPECT_NE(why.find(tokens[tokens.size() - 2] + " is missing"), std::string::npos) << why;
  // A value this build rejects.
  std::string bad = blob;
  const std::string key = std::string("NCCL_BUFFSIZE") + '\0';
  const size_t at = bad.find(key);
  ASSERT_NE(at, std::string::npos);
  const size_t valueAt = at + key.size();
  bad.replace(valueAt, bad.find('\0', valueAt) - valueAt, "lots");
  EXPECT_FALSE(param::decodeAgreed(bad, &out, &why));
  EXPECT_NE(why.find("NCCL_BUFFSIZE=\"lots\""), std::string::npos) << why;
  // A truncated blob.
  EXPECT_FALSE(param::decodeAgreed(blob.substr(0, blob.size() - 1), &out, &why));
}

TEST(AgreedParams, ScopeIsListedForEveryParameter) {
  int agreed = 0;
  for (const param::ParamView& p : param::list()) {
    if (p.name == "NCCL_ALGO" || p.name == "NCCL_BUFFSIZE" || p.name == "NCCL_SHM_DISABLE" ||
        p.name == "RCCL_ENABLE_DDA_ALL_REDUCE" || p.name == "WEFT_TUNER_CONSTANTS")
      EXPECT_TRUE(p.agreed) << p.name;
    if (p.name == "NCCL_DEBUG" || p.name == "NCCL_SOCKET_IFNAME" || p.name == "WEFT_TIMEOUT_MS" ||
        p.name == "WEFT_CACHE_DIR")
      EXPECT_FALSE(p.agreed) << p.name;
    agreed += p.agreed;
  }
  // Every Agreed row travels in the wire form (one name-value pair each).
  const std::string blob = param::encodeAgreed(param::localAgreed());
  EXPECT_EQ(std::count(blob.begin(), blob.end(), '\0'), 2 * agreed);
}

HostContribution contribution(double copyGBps, double handoffUs, int cores) {
  HostContribution c{};
  c.constants.copyGBps = copyGBps;
  c.constants.handoffUs = handoffUs;
  c.cores = cores;
  return c;
}

TEST(AgreedMachine, LowestRankSpeaksForItsHostAndTheSlowestHostSetsEachField) {
  // Ranks 0 and 1 on host 7, rank 2 on host 9; rank 1's contribution is ignored.
  const std::vector<HostContribution> byRank{contribution(10, 0.1, 8), contribution(0.5, 9, 1),
                                             contribution(5, 0.3, 4)};
  const AgreedMachine m = combineContributions(byRank, {7, 7, 9});
  EXPECT_DOUBLE_EQ(m.constants.copyGBps, 5);     // bandwidth: the smaller
  EXPECT_DOUBLE_EQ(m.constants.handoffUs, 0.3);  // latency: the larger
  EXPECT_EQ(m.cores, 4);
  // One host: its lowest rank's values, whatever the others measured.
  const AgreedMachine one = combineContributions(byRank, {7, 7, 7});
  EXPECT_DOUBLE_EQ(one.constants.copyGBps, 10);
  EXPECT_EQ(one.cores, 8);
}

TEST(AgreedMachine, SameResultWhateverTheHostsAreCalled) {
  const std::vector<HostContribution> byRank{contribution(3, 0.2, 2), contribution(6, 0.1, 2), contribution(4, 0.4, 3)};
  const AgreedMachine a = combineContributions(byRank, {1, 2, 3});
  const AgreedMachine b = combineContributions(byRank, {30, 20, 10});
  for (int i = 0; i < kNumConstantFields; ++i)
    EXPECT_DOUBLE_EQ(a.constants.*kConstantFields[i].field, b.constants.*kConstantFields[i].field)
        << kConstantFields[i].name;
  EXPECT_EQ(a.cores, b.cores);
}

// Code that decides how a collective runs must read settings from the communicator's agreed copy:
// a per-rank accessor there would let ranks choose differently. Agreed parameters have no free
// accessor at all; this catches a per-rank one read in the wrong place.
std::vector<std::string> filesUnder(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir + "/" + name;
    if (e->d_type == DT_DIR) {
      for (std::string& f : filesUnder(path)) out.push_back(std::move(f));
    } else if (name.size() > 3 && (name.substr(name.size() - 3) == ".cc" || name.substr(name.size() - 2) == ".h")) {
      out.push_back(path);
    }
  }
  closedir(d);
  return out;
}

TEST(AgreedParams, ChoosingCodeReadsNoPerRankParameter) {
  const std::string src = WEFT_SOURCE_DIR;
  std::vector<std::string> files = filesUnder(src + "/collectives");
  for (const char* f : {"select.cc", "tuner.cc", "tuner_setup.cc", "algo_filter.cc", "agreed_constants.cc"})
    files.push_back(src + "/src/tuning/" + f);
  files.push_back(src + "/src/task/algorithm.cc");
  files.push_back(src + "/src/comm/comm_algorithms.cc");
  ASSERT_GT(files.size(), 8u);
  const std::regex call(R"(param::([a-z]\w*)\s*\()");
  for (const std::string& path : files) {
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (auto it = std::sregex_iterator(s.begin(), s.end(), call); it != std::sregex_iterator(); ++it)
      ADD_FAILURE() << path << " calls param::" << (*it)[1] << "(): read comm->agreed instead (scope agreed in "
                    << "src/base/param_table.h)";
  }
}

}  // namespace
}  // namespace weft
