// A ncclUniqueId as a user hands it to ncclCommInitRank: any 128 bytes. decodeId must refuse what
// Weft did not make, and what it accepts must round-trip through encodeId.
#include <cstdint>
#include <cstring>

#include "bootstrap/protocol.h"
#include "bootstrap/unique_id.h"
#include "fuzz_input.h"

using namespace weft;
using namespace weft::bootstrap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  ncclUniqueId id;
  in.take(&id);
  (void)bootstrapIdHash(id);
  IdLayout layout;
  if (!decodeId(id, &layout)) return 0;
  if (layout.magic != kMagic || layout.version != kProtocolVersion) fuzz::fail("a foreign id was decoded");
  if (!socketAddressValid(layout.root) || socketAddressPort(layout.root) == 0) fuzz::fail("an id without a root");
  (void)socketAddressToString(layout.root);
  ncclUniqueId again;
  encodeId(layout, &again);
  IdLayout twice;
  if (!decodeId(again, &twice)) fuzz::fail("a re-encoded id does not decode");
  if (twice.kind != layout.kind || !secretEqual(twice.secret, layout.secret) ||
      !socketAddressEqual(twice.root, layout.root))
    fuzz::fail("a re-encoded id decodes to something else");
  return 0;
}
