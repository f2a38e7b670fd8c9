/* The environment plugin ABI (NCCL_ENV_PLUGIN): a library exporting ncclEnvPlugin_v1 answers
 * every parameter lookup in place of the process environment. Layout as NCCL 2.28+ defines it;
 * plain C so that a plugin can include it. */
#ifndef WEFT_ENV_PLUGIN_ABI_H_
#define WEFT_ENV_PLUGIN_ABI_H_

#include <stdint.h>

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

#endif /* WEFT_ENV_PLUGIN_ABI_H_ */
