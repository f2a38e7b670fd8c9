/* The environment plugin ABI (NCCL_ENV_PLUGIN): a library exporting ncclEnvPlugin_v2 (NCCL 2.31)
 * or ncclEnvPlugin_v1 (NCCL 2.28) answers every parameter lookup in place of the process
 * environment. Layouts as NCCL defines them; plain C so that a plugin can include it. */
#ifndef WEFT_ENV_PLUGIN_ABI_H_
#define WEFT_ENV_PLUGIN_ABI_H_

#include <stdint.h>

#include "base/plugin_logger_abi.h"
#include "nccl.h"

typedef struct {
  const char* name;
  /* Called once, before the first lookup, with the NCCL version the library implements and its
   * suffix (Weft passes ""). A result other than ncclSuccess leaves the plugin unused. */
  ncclResult_t (*init)(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch, const char* suffix);
  /* Called once at process exit. */
  ncclResult_t (*finalize)(void);
  /* The value of variable `name`, or NULL when it is unset. The text must stay valid until the
   * next call. */
  const char* (*getEnv)(const char* name);
} ncclEnv_v1_t;

/* v2 is v1 with a logger for init: a plugin may log through it at any time until finalize. What it
 * logs before Weft's logging is set up (the logging settings are themselves read through the
 * plugin) is kept and printed once it is. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch, const char* suffix,
                       ncclDebugLogger_t logFunction);
  ncclResult_t (*finalize)(void);
  const char* (*getEnv)(const char* name);
} ncclEnv_v2_t;

#endif /* WEFT_ENV_PLUGIN_ABI_H_ */
