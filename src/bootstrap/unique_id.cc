// Making and reading ncclUniqueIds: a magic, a random secret and the address of a root service
// that ncclGetUniqueId starts in the calling process (or, under NCCL_COMM_ID, the address rank 0
// will serve on).
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "bootstrap/protocol.h"
#include "sockets/random.h"
#include "sockets/interfaces.h"
#include "sockets/socket.h"
#include "base/log.h"
#include "base/params.h"

namespace weft {

namespace bootstrap {

namespace {

// FNV-1a, then a splitmix64 finalizer so that nearby inputs land far apart.
uint64_t hashBytes(const void* data, size_t len, uint64_t seed) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

}  // namespace

bool secretEqual(const Secret& a, const Secret& b) {
  // No early exit: how long a refusal takes should not hint at how much of a guess was right.
  uint64_t diff = (a.w[0] ^ b.w[0]) | (a.w[1] ^ b.w[1]);
  return diff == 0;
}

Secret secretFromString(const std::string& text) {
  Secret s;
  s.w[0] = hashBytes(text.data(), text.size(), 0x5745465453454352ull);
  s.w[1] = hashBytes(text.data(), text.size(), 0x434f4d4d49443a3aull);
  return s;
}

bool randomSecret(Secret* out) { return randomBytes(out, sizeof(*out)); }

void encodeId(const IdLayout& layout, ncclUniqueId* id) {
  memset(id, 0, sizeof(*id));
  IdLayout clean;
  memset(&clean, 0, sizeof(clean));  // padding bytes too: the id is hashed byte by byte
  clean.magic = layout.magic;
  clean.version = layout.version;
  clean.kind = layout.kind;
  clean.secret = layout.secret;
  clean.root = layout.root;
  memcpy(id, &clean, sizeof(clean));
}

bool decodeId(const ncclUniqueId& id, IdLayout* layout) {
  memcpy(layout, &id, sizeof(*layout));
  if (layout->magic != kMagic || layout->version != kProtocolVersion) return false;
  if (layout->kind != static_cast<uint16_t>(IdKind::kRootStarted) &&
      layout->kind != static_cast<uint16_t>(IdKind::kCommIdEnv))
    return false;
  return socketAddressValid(layout->root) && socketAddressPort(layout->root) != 0;
}

std::string formatRankList(const int* ranks, size_t count, size_t maxChars) {
  std::string out;
  size_t i = 0;
  while (i < count) {
    size_t j = i;
    while (j + 1 < count && ranks[j + 1] == ranks[j] + 1) j++;
    std::string piece = std::to_string(ranks[i]);
    if (j > i) {
      piece += '-';
      piece += std::to_string(ranks[j]);
    }
    if (!out.empty() && out.size() + piece.size() + 2 > maxChars) {
      out += ", ... (";
      out += std::to_string(count);
      out += " in all)";
      return out;
    }
    if (!out.empty()) out += ", ";
    out += piece;
    i = j + 1;
  }
  return out;
}

}  // namespace bootstrap

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
  layout.secret = bootstrap::secretFromString(commId);
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

uint64_t bootstrapIdHash(const ncclUniqueId& id) {
  return bootstrap::hashBytes(&id, sizeof(id), 0x6964686173680000ull);
}

}  // namespace weft
