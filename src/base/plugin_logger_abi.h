/* The logger NCCL hands its plugins (network, tuner) at init, shared by their ABI headers: levels
 * and subsystem bits are NCCL_DEBUG's. Plain C so that a plugin can include it. */
#ifndef WEFT_PLUGIN_LOGGER_ABI_H_
#define WEFT_PLUGIN_LOGGER_ABI_H_

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...);

#endif /* WEFT_PLUGIN_LOGGER_ABI_H_ */
