// The IB network's pure choices: NCCL_IB_HCA matching and the RoCE GID choice, on tables made up
// here (the lab checks the same against a real Soft-RoCE device).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstring>
#include <string>
#include <vector>

#include "weft/build_config.h"
#if WEFT_HAVE_VERBS
#include "transports/net/ib/ib_select.h"

namespace {

using weft::net::ib::chooseGid;
using weft::net::ib::GidEntry;
using weft::net::ib::GidWant;
using weft::net::ib::hcaAdmits;

TEST(IbHca, EmptyAdmitsEverything) { EXPECT_TRUE(hcaAdmits("", "mlx5_0", 1)); }

TEST(IbHca, PrefixExactExcludeAndPorts) {
  EXPECT_TRUE(hcaAdmits("mlx5", "mlx5_0", 1));
  EXPECT_TRUE(hcaAdmits("mlx5", "mlx5_1", 2));
  EXPECT_FALSE(hcaAdmits("mlx4", "mlx5_0", 1));
  EXPECT_TRUE(hcaAdmits("=mlx5_0", "mlx5_0", 1));
  EXPECT_FALSE(hcaAdmits("=mlx5", "mlx5_0", 1));
  EXPECT_TRUE(hcaAdmits("mlx5_0:1,mlx5_1:2", "mlx5_1", 2));
  EXPECT_FALSE(hcaAdmits("mlx5_0:1,mlx5_1:2", "mlx5_1", 1));
  EXPECT_FALSE(hcaAdmits("^mlx5_0", "mlx5_0", 1));
  EXPECT_TRUE(hcaAdmits("^mlx5_0", "mlx5_1", 1));
  EXPECT_FALSE(hcaAdmits("^mlx5", "mlx5_10", 1));
  EXPECT_TRUE(hcaAdmits("^=mlx5", "mlx5_10", 1));
  EXPECT_FALSE(hcaAdmits("^=mlx5_0:1", "mlx5_0", 1));
  EXPECT_TRUE(hcaAdmits("^=mlx5_0:1", "mlx5_0", 2));
}

GidEntry v4(int index, const char* ip, int version) {
  GidEntry e;
  e.index = index;
  e.raw[10] = e.raw[11] = 0xff;
  inet_pton(AF_INET, ip, e.raw + 12);
  e.roceVersion = version;
  return e;
}

GidEntry v6(int index, const char* ip, int version) {
  GidEntry e;
  e.index = index;
  inet_pton(AF_INET6, ip, e.raw);
  e.roceVersion = version;
  return e;
}

// A port's table as the kernel fills it: each address once as RoCE v1 and once as v2.
std::vector<GidEntry> table() {
  return {v6(0, "fe80::1", 1), v6(1, "fe80::1", 2), v4(2, "10.1.0.5", 1),    v4(3, "10.1.0.5", 2),
          v6(4, "fd00::5", 1), v6(5, "fd00::5", 2), v4(6, "192.168.7.5", 2), GidEntry{}};
}

TEST(IbGid, DefaultIsTheIpv4RoceV2Gid) {
  std::string why;
  GidWant want;
  want.family = AF_INET;
  EXPECT_EQ(chooseGid(table(), want, &why), 3) << why;
}

TEST(IbGid, VersionOneWhenAsked) {
  std::string why;
  GidWant want;
  want.family = AF_INET;
  want.roceVersion = 1;
  EXPECT_EQ(chooseGid(table(), want, &why), 2) << why;
}

TEST(IbGid, RangePicksTheAddress) {
  std::string why;
  GidWant want;
  want.family = AF_INET;
  want.range = "192.168.0.0/16";
  EXPECT_EQ(chooseGid(table(), want, &why), 6) << why;
  want.range = "172.16.0.0/12";
  EXPECT_EQ(chooseGid(table(), want, &why), -1);
  EXPECT_NE(why.find("no GID of family AF_INET in 172.16.0.0/12"), std::string::npos) << why;
  want.range = "10.1.0.0";
  EXPECT_EQ(chooseGid(table(), want, &why), -1);
  EXPECT_NE(why.find("not an address/prefix"), std::string::npos) << why;
}

TEST(IbGid, Ipv6PrefersGlobalOverLinkLocal) {
  std::string why;
  GidWant want;
  want.family = AF_INET6;
  EXPECT_EQ(chooseGid(table(), want, &why), 5) << why;
  std::vector<GidEntry> onlyLocal = {v6(0, "fe80::1", 1), v6(1, "fe80::1", 2)};
  EXPECT_EQ(chooseGid(onlyLocal, want, &why), 1) << why;
  want.range = "fd00::/8";
  EXPECT_EQ(chooseGid(table(), want, &why), 5) << why;
}

TEST(IbGid, AnotherVersionWhenTheWantedOneIsMissing) {
  std::string why;
  GidWant want;
  want.family = AF_INET;
  std::vector<GidEntry> v1only = {v4(0, "10.0.0.1", 1)};
  EXPECT_EQ(chooseGid(v1only, want, &why), 0) << why;
  EXPECT_EQ(chooseGid({GidEntry{}}, want, &why), -1);
}

TEST(IbGid, TextOfMappedAndIpv6Gids) {
  EXPECT_EQ(weft::net::ib::gidToString(v4(0, "10.1.0.5", 2).raw), "10.1.0.5");
  EXPECT_EQ(weft::net::ib::gidToString(v6(0, "fd00::5", 2).raw), "fd00::5");
}

}  // namespace
#endif  // WEFT_HAVE_VERBS
