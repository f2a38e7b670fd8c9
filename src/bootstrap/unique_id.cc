// Making and reading ncclUniqueIds: a magic, a random secret and the address of a root service
// that ncclGetUniqueId starts in the calling process (or, under NCCL_COMM_ID, the address rank 0
// will serve on).
#include "bootstrap/unique_id.h"

#include <cstring>

#include "base/hash.h"
#include "base/log.h"
#include "base/params.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/protocol.h"
#include "bootstrap/root.h"
#include "sockets/interfaces.h"
#include "sockets/random.h"
#include "sockets/socket.h"

namespace weft {

namespace {

ncclResult_t idFromCommIdEnv(const std::string& commId, ncclUniqueId* id, std::string* why) {
  AddressFamily family;
  (void)parseAddressFamily(param::socketFamily(), &family);
  bootstrap::IdLayout layout;
  memset(&layout, 0, sizeof(layout));
  if (!parseHostPort(commId, family, &layout.root, why)) {
    *why = "NCCL_COMM_ID: " + *why;
    return ncclInvalidArgument;
  }
  layout.magic = bootstrap::kMagic;
  layout.version = bootstrap::kProtocolVersion;
  layout.kind = static_cast<uint16_t>(bootstrap::IdKind::kCommIdEnv);
  bool userKeyed = false;
  layout.secret = bootstrap::secretForCommId(commId, &userKeyed);
  bootstrap::encodeId(layout, id);
  return ncclSuccess;
}

}  // namespace

ncclResult_t bootstrapGetLocalUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  std::string why;
  NetInterface iface;
  ncclResult_t rc = selectInterface(&iface, &why);
  if (rc != ncclSuccess) {
    WEFT_WARN("ncclGetUniqueId: %s", why.c_str());
    return rc;
  }
  bootstrap::IdLayout layout;
  memset(&layout, 0, sizeof(layout));
  layout.magic = bootstrap::kMagic;
  layout.version = bootstrap::kProtocolVersion;
  layout.kind = static_cast<uint16_t>(bootstrap::IdKind::kRootStarted);
  if (!bootstrap::randomSecret(&layout.secret)) {
    WEFT_WARN("ncclGetUniqueId: cannot read random bytes for the id's secret (getrandom and /dev/urandom failed)");
    return ncclSystemError;
  }
  Socket listener;
  rc = Socket::listen(iface.addr, /*reuseAddr=*/false, &listener, &layout.root, &why);
  if (rc != ncclSuccess) {
    WEFT_WARN("ncclGetUniqueId: cannot start the bootstrap root on interface %s: %s", iface.name.c_str(), why.c_str());
    return rc;
  }
  SocketAddress rootAddr = layout.root;
  rc = bootstrap::startRoot(std::move(listener), rootAddr, layout.secret, param::timeoutMs(), &why);
  if (rc != ncclSuccess) {
    WEFT_WARN("ncclGetUniqueId: %s", why.c_str());
    return rc;
  }
  bootstrap::encodeId(layout, id);
  WEFT_INFO(kLogBootstrap, "ncclGetUniqueId: bootstrap root listening on %s (interface %s)",
            socketAddressToString(rootAddr).c_str(), iface.name.c_str());
  return ncclSuccess;
}

ncclResult_t bootstrapGetUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  std::string commId = param::commId();
  if (commId.empty()) return bootstrapGetLocalUniqueId(id);
  // NCCL_COMM_ID: no root here; rank 0 serves the rendezvous on that address when it joins.
  std::string why;
  ncclResult_t rc = idFromCommIdEnv(commId, id, &why);
  if (rc != ncclSuccess) WEFT_WARN("ncclGetUniqueId: %s", why.c_str());
  return rc;
}

uint64_t bootstrapIdHash(const ncclUniqueId& id) { return hashBytes(&id, sizeof(id), 0x6964686173680000ull); }

}  // namespace weft
