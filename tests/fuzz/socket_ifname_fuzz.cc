// NCCL_SOCKET_IFNAME specs ("eth,ib", "^docker", "=eth0", "^=lo") against interface names, and
// against this machine's interfaces as Weft lists them. Input: the spec, a newline, then names
// separated by newlines.
#include <cstdint>
#include <string>
#include <vector>

#include "base/text.h"
#include "fuzz_input.h"
#include "sockets/interfaces.h"

using namespace weft;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const std::string spec = in.until('\n');
  for (int i = 0; i < 16 && in.left() > 0; i++) {
    const std::string name = in.until('\n');
    const bool match = interfaceNameMatches(spec, name);
    // '^' turns the same list into its complement.
    const std::string body = trimBlanks(spec);
    if (!body.empty() && body[0] != '^' && interfaceNameMatches("^" + body, name) == match)
      fuzz::fail("'^' does not invert the match");
  }
  std::vector<NetInterface> found;
  std::string why;
  if (findInterfaces(spec, AddressFamily::kAny, &found, &why))
    for (const NetInterface& i : found)
      if (!trimBlanks(spec).empty() && !interfaceNameMatches(spec, i.name))
        fuzz::fail("an interface the spec refuses was listed");
  return 0;
}
