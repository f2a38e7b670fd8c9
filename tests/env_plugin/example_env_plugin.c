/* An environment plugin for the tests (tests/env_plugin/check_env_plugin.py): it answers a
 * variable NAME with the process's ENVPLUGIN_NAME, so a test can tell the plugin's answers from the
 * process environment. ENVPLUGIN_FAIL_INIT makes init fail; ENVPLUGIN_FINALIZE_FILE names a file
 * that finalize writes the version init was given into, so a test can see that both ran. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env_plugin_abi.h"

static char gVersion[32];
static char gKey[256];

static ncclResult_t exampleInit(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix) {
  if (getenv("ENVPLUGIN_FAIL_INIT") != NULL) return ncclInternalError;
  snprintf(gVersion, sizeof gVersion, "%u.%u.%u%s", major, minor, patch, suffix != NULL ? suffix : "(null)");
  return ncclSuccess;
}

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
  return getenv(gKey);
}

__attribute__((visibility("default")))
const ncclEnv_v1_t ncclEnvPlugin_v1 = {"weft-example-env", exampleInit, exampleFinalize, exampleGetEnv};
