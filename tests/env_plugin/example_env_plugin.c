/* An environment plugin for the tests (tests/env_plugin/check_env_plugin.py): it answers a
 * variable NAME with the process's ENVPLUGIN_NAME, so a test can tell the plugin's answers from the
 * process environment. ENVPLUGIN_FAIL_INIT makes init fail; ENVPLUGIN_FINALIZE_FILE names a file
 * that finalize writes the version init was given into, so a test can see that both ran.
 * Built twice: WEFT_EXAMPLE_ENV_ABI 1 exports ncclEnvPlugin_v1, 2 ncclEnvPlugin_v2, whose init and
 * getEnv also log through the logger init is given (an INFO line each, and a WARN line for a
 * lookup of ENVPLUGIN_WARN_ON), so a test can see what a plugin logs reach Weft's log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env_plugin_abi.h"

static char gVersion[32];
static char gKey[256];

#if WEFT_EXAMPLE_ENV_ABI == 2
static ncclDebugLogger_t gLog;
#define EXAMPLE_LOG(level, ...)                                        \
  do {                                                                 \
    if (gLog != NULL) gLog(level, 0, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#else
#define EXAMPLE_LOG(level, ...) \
  do {                          \
  } while (0)
#endif

static ncclResult_t initVersion(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix) {
  if (getenv("ENVPLUGIN_FAIL_INIT") != NULL) return ncclInternalError;
  snprintf(gVersion, sizeof gVersion, "%u.%u.%u%s", major, minor, patch, suffix != NULL ? suffix : "(null)");
  EXAMPLE_LOG(NCCL_LOG_INFO, "weft-example-env v2 initialised for NCCL %s", gVersion);
  return ncclSuccess;
}

#if WEFT_EXAMPLE_ENV_ABI == 2
static ncclResult_t exampleInit(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix,
                                ncclDebugLogger_t logFunction) {
  gLog = logFunction;
  return initVersion(major, minor, patch, suffix);
}
#else
static ncclResult_t exampleInit(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix) {
  return initVersion(major, minor, patch, suffix);
}
#endif

static ncclResult_t exampleFinalize(void) {
  const char* path = getenv("ENVPLUGIN_FINALIZE_FILE");
  if (path == NULL) return ncclSuccess;
  FILE* f = fopen(path, "w");
  if (f == NULL) return ncclSystemError;
  fprintf(f, "finalized after init with %s\n", gVersion);
  fclose(f);
  return ncclSuccess;
}

static const char* exampleGetEnv(const char* name) {
  if (strlen(name) + sizeof "ENVPLUGIN_" > sizeof gKey) return NULL;
  snprintf(gKey, sizeof gKey, "ENVPLUGIN_%s", name);
  const char* warnOn = getenv("ENVPLUGIN_WARN_ON");
  if (warnOn != NULL && strcmp(warnOn, name) == 0)
    EXAMPLE_LOG(NCCL_LOG_WARN, "weft-example-env v2 was asked for %s", name);
  return getenv(gKey);
}

#if WEFT_EXAMPLE_ENV_ABI == 2
__attribute__((visibility("default")))
const ncclEnv_v2_t ncclEnvPlugin_v2 = {"weft-example-env", exampleInit, exampleFinalize, exampleGetEnv};
#else
__attribute__((visibility("default")))
const ncclEnv_v1_t ncclEnvPlugin_v1 = {"weft-example-env", exampleInit, exampleFinalize, exampleGetEnv};
#endif
