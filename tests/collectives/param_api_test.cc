// NCCL 2.30's parameter calls (ncclParamBind, the typed getters, ncclParamGetStr/Get,
// ncclParamGetParameter, ncclParamGetAllParameterKeys, ncclParamDumpAll) over Weft's registry: the
// values are those the process runs with, by primary name and by alias.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "harness.h"

namespace weft_test {
namespace {

TEST(ParamApi, TypedValuesFromTheEnvironment) {
  WEFT_REQUIRE_FRESH_PROCESS("the test sets NCCL_BUFFSIZE, NCCL_PROTO and an alias before Weft reads them");
  ScopedEnv buff("NCCL_BUFFSIZE", "3M");
  ScopedEnv proto("NCCL_PROTO", "Simple");
  ScopedEnv dda("RCCL_ENABLE_DDA_ALL_TO_ALL", "1");

  ncclParamHandle_t h = nullptr;
  ASSERT_EQ(ncclParamBind(&h, "NCCL_BUFFSIZE"), ncclSuccess) << ncclGetLastError(nullptr);
  ncclParamHandle_t again = nullptr;
  ASSERT_EQ(ncclParamBind(&again, "NCCL_BUFFSIZE"), ncclSuccess);
  EXPECT_EQ(h, again) << "one parameter, one handle";
  int64_t i64 = 0;
  ASSERT_EQ(ncclParamGetI64(h, &i64), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(i64, 3 << 20);
  uint32_t u32 = 0;
  ASSERT_EQ(ncclParamGetU32(h, &u32), ncclSuccess);
  EXPECT_EQ(u32, 3u << 20);
  int16_t i16 = 0;
  EXPECT_EQ(ncclParamGetI16(h, &i16), ncclInvalidArgument) << "3 MiB does not fit 16 bits";
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("NCCL_BUFFSIZE"), std::string::npos)
      << ncclGetLastError(nullptr);
  int64_t raw = 0;
  int len = 0;
  ASSERT_EQ(ncclParamGet(h, &raw, sizeof raw, &len), ncclSuccess);
  EXPECT_EQ(len, 8);
  EXPECT_EQ(raw, 3 << 20);
  EXPECT_EQ(ncclParamGet(h, &raw, 4, &len), ncclInvalidArgument) << "maxLen too small";
  EXPECT_EQ(len, 8) << "the length needed is reported even when it does not fit";

  ncclParamHandle_t p = nullptr;
  ASSERT_EQ(ncclParamBind(&p, "NCCL_PROTO"), ncclSuccess);
  const char* text = nullptr;
  ASSERT_EQ(ncclParamGetStr(p, &text), ncclSuccess);
  EXPECT_STREQ(text, "Simple");
  EXPECT_EQ(ncclParamGetI32(p, reinterpret_cast<int32_t*>(&u32)), ncclInvalidArgument) << "a string is no integer";
  char buf[32];
  ASSERT_EQ(ncclParamGet(p, buf, sizeof buf, &len), ncclSuccess);
  EXPECT_EQ(len, 7);
  EXPECT_STREQ(buf, "Simple");

  // A boolean reads as 0 or 1, through its RCCL name.
  ncclParamHandle_t b = nullptr;
  ASSERT_EQ(ncclParamBind(&b, "RCCL_ENABLE_DDA_ALL_TO_ALL"), ncclSuccess);
  uint8_t u8 = 7;
  ASSERT_EQ(ncclParamGetU8(b, &u8), ncclSuccess);
  EXPECT_EQ(u8, 1);

  // An alias binds to its parameter.
  ncclParamHandle_t byAlias = nullptr, byName = nullptr;
  ASSERT_EQ(ncclParamBind(&byAlias, "NCCL_MAX_CTAS"), ncclSuccess);
  ASSERT_EQ(ncclParamBind(&byName, "NCCL_MAX_NCHANNELS"), ncclSuccess);
  EXPECT_EQ(byAlias, byName);

  const char* value = nullptr;
  int valueLen = -1;
  ASSERT_EQ(ncclParamGetParameter("NCCL_PROTO", &value, &valueLen), ncclSuccess);
  EXPECT_STREQ(value, "Simple");
  EXPECT_EQ(valueLen, 6);
  ASSERT_EQ(ncclParamGetParameter("NCCL_BUFFSIZE", &value, &valueLen), ncclSuccess);
  EXPECT_EQ(std::string(value, static_cast<size_t>(valueLen)), std::to_string(3 << 20));
}

TEST(ParamApi, UnknownKeysAndNullArguments) {
  ncclParamHandle_t h = nullptr;
  EXPECT_EQ(ncclParamBind(&h, "NCCL_NO_SUCH_PARAMETER"), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("NCCL_NO_SUCH_PARAMETER"), std::string::npos);
  EXPECT_EQ(ncclParamBind(nullptr, "NCCL_BUFFSIZE"), ncclInvalidArgument);
  EXPECT_EQ(ncclParamBind(&h, nullptr), ncclInvalidArgument);
  int64_t v = 0;
  EXPECT_EQ(ncclParamGetI64(nullptr, &v), ncclInvalidArgument);
  const char* value = nullptr;
  int len = 0;
  EXPECT_EQ(ncclParamGetParameter("NCCL_NO_SUCH_PARAMETER", &value, &len), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGetParameter("NCCL_BUFFSIZE", nullptr, &len), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGetAllParameterKeys(nullptr, &len), ncclInvalidArgument);
}

// Every key the table lists binds, and reads as text; the list is Weft's registry (weft-info).
TEST(ParamApi, EveryListedKeyBindsAndReads) {
  const char** keys = nullptr;
  int n = 0;
  ASSERT_EQ(ncclParamGetAllParameterKeys(&keys, &n), ncclSuccess);
  ASSERT_GT(n, 50);
  std::set<std::string> seen;
  for (int i = 0; i < n; ++i) {
    ASSERT_NE(keys[i], nullptr);
    EXPECT_TRUE(seen.insert(keys[i]).second) << keys[i] << " is listed twice";
    ncclParamHandle_t h = nullptr;
    ASSERT_EQ(ncclParamBind(&h, keys[i]), ncclSuccess) << keys[i];
    const char* text = nullptr;
    EXPECT_EQ(ncclParamGetStr(h, &text), ncclSuccess) << keys[i];
  }
  for (const char* expected : {"NCCL_BUFFSIZE", "NCCL_ALGO", "NCCL_PROTO", "WEFT_TIMEOUT_MS", "NCCL_DEBUG"})
    EXPECT_TRUE(seen.count(expected)) << expected << " is not listed";
  ncclParamDumpAll();  // logs (nothing without NCCL_DEBUG); must not fail
}

}  // namespace
}  // namespace weft_test
