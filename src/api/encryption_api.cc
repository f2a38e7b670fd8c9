// ncclSetEncryption: TLS for the library's own sockets (src/sockets/tls.h, docs/security.md).
#include <cstring>
#include <string>

#include "api/api_support.h"
#include "base/log.h"
#include "sockets/tls.h"

using namespace weft;

WEFT_ALIAS(ncclResult_t, ncclSetEncryption, const ncclEncryptionConfig_t*)
WEFT_API ncclResult_t pncclSetEncryption(const ncclEncryptionConfig_t* config) {
  return apiGuard("ncclSetEncryption", [&] {
    ncclEncryptionConfig_t c = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
    if (config != nullptr) {
      if (config->magic != 0xcafebeef || config->size < offsetof(ncclEncryptionConfig_t, psk) + sizeof(c.psk))
        return setError(nullptr, ncclInvalidArgument,
                        "ncclSetEncryption: the config was not made from NCCL_ENCRYPTION_CONFIG_INITIALIZER");
      memcpy(&c, config, sizeof(c));
    }
    std::string why;
    ncclResult_t r = ncclSuccess;
    switch (c.mode) {
      case NCCL_ENCRYPTION_MODE_NONE: r = tlsSetKey(nullptr, &why); break;
      case NCCL_ENCRYPTION_MODE_PSK:
        if (c.psk == nullptr)
          return setError(nullptr, ncclInvalidArgument, "ncclSetEncryption: NCCL_ENCRYPTION_MODE_PSK needs psk");
        r = tlsSetKey(c.psk, &why);
        break;
      default:
        return setError(
            nullptr, ncclInvalidArgument,
            "ncclSetEncryption: mode %d is not NCCL_ENCRYPTION_MODE_NONE (0) or NCCL_ENCRYPTION_MODE_PSK (1)", c.mode);
    }
    if (r != ncclSuccess) return setError(nullptr, r, "ncclSetEncryption: %s", why.c_str());
    WEFT_INFO(kLogInit | kLogNet | kLogBootstrap, "ncclSetEncryption: %s",
              c.mode == NCCL_ENCRYPTION_MODE_PSK ? "TLS 1.3 with a pre-shared key on the library's sockets"
                                                 : "encryption off");
    return ncclSuccess;
  });
}
