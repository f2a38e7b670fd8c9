// The C header check of nccl.h, compiled as C++ (C++11 and C++20 targets).
#include "header_check_nccl.c"

// In C++ the initializers also give constant expressions, and work in assignments.
constexpr ncclConfig_t kWeftCheckConfig = NCCL_CONFIG_INITIALIZER;
constexpr ncclSimInfo_t kWeftCheckSimInfo = NCCL_SIM_INFO_INITIALIZER;
static_assert(kWeftCheckConfig.size == sizeof(ncclConfig_t), "config size");
static_assert(kWeftCheckConfig.magic == 0xcafebeef, "config magic");
static_assert(kWeftCheckConfig.version == NCCL_VERSION_CODE, "config version");
static_assert(kWeftCheckConfig.nvlinkCentricSched == NCCL_CONFIG_UNDEF_INT, "last config field");
static_assert(kWeftCheckSimInfo.magic == 0x74685283, "sim info magic");
static_assert(kWeftCheckSimInfo.estimatedTime < 0.0f, "sim info estimate unset");

ncclConfig_t weftHeaderCheckMakeConfig();
ncclConfig_t weftHeaderCheckMakeConfig() {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  c.blocking = 0;
  c = kWeftCheckConfig;
  return c;
}
