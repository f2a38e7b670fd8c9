// NCCL_COMM_ID ("host:port", "[v6]:port") and NCCL_SOCKET_FAMILY as a user writes them. Names are
// only resolved when the host is a numeric address, so the fuzzer never waits on DNS.
#include <arpa/inet.h>

#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "sockets/address.h"

using namespace weft;

namespace {

bool numericHost(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  std::string bare = host.substr(0, host.find('%'));  // an IPv6 scope names an interface
  return inet_pton(AF_INET, bare.c_str(), buf) == 1 || inet_pton(AF_INET6, bare.c_str(), buf) == 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  AddressFamily family;
  std::string familyText = in.until('\n');
  if (!parseAddressFamily(familyText, &family) && family != AddressFamily::kAny)
    fuzz::fail("a refused family is not left at kAny");
  const std::string text = in.rest();
  HostPort hp;
  std::string why;
  if (!splitHostPort(text, &hp, &why)) {
    if (why.empty()) fuzz::fail("a refusal without a reason");
    SocketAddress out;
    std::string why2;
    if (parseHostPort(text, family, &out, &why2)) fuzz::fail("parseHostPort accepts what splitHostPort refuses");
    return 0;
  }
  const int port = std::stoi(hp.port);
  if (hp.host.empty() || port < 1 || port > 65535) fuzz::fail("a bad host or port was accepted");
  if (hp.host.find('\0') != std::string::npos || !numericHost(hp.host)) return 0;
  SocketAddress out;
  if (parseHostPort(text, family, &out, &why)) {
    if (!socketAddressValid(out) || socketAddressPort(out) != port) fuzz::fail("a resolved address lost its port");
    (void)socketAddressToString(out);
  }
  return 0;
}
