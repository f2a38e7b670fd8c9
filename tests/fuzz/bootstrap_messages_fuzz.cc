// What a rank reads from sockets during bootstrap (src/bootstrap/protocol.h): the root's reply
// (header, then a table or a reason), the ring hello of a connection to its listener, the header
// of a point-to-point message and the header that opens each ring operation. The first byte picks
// the message; the rest are its bytes.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/protocol.h"
#include "fuzz_input.h"

using namespace weft;
using namespace weft::bootstrap;

namespace {

const Secret kSecret{{0x1111222233334444ull, 0x5555666677778888ull}};

void rootReply(fuzz::Input& in) {
  const int nranks = 1 + in.byte() % 64;
  const bool fromEnv = in.byte() & 1;
  RootReply reply;
  in.take(&reply);
  if (!rootReplyProblem(reply, nranks).empty()) return;
  if (reply.textLen > kMaxReplyText) fuzz::fail("an oversized reply was believed");
  std::string body = in.rest();
  if (body.size() > reply.textLen) body.resize(reply.textLen);
  if (reply.code == kRootOk) {
    if (reply.textLen != nranks * sizeof(SocketAddress)) fuzz::fail("a table of the wrong size was believed");
    std::vector<SocketAddress> table(nranks, emptySocketAddress());
    memcpy(table.data(), body.data(), body.size());
    for (const SocketAddress& a : table) (void)socketAddressToString(a);
    return;
  }
  std::string why;
  ncclResult_t rc = rootRefusal(reply.code, body, "bootstrap: rank 0", nranks, "192.0.2.1:4000", fromEnv, &why);
  if (rc == ncclSuccess || why.empty()) fuzz::fail("a refusal read as success or without a message");
}

void ringHello(fuzz::Input& in) {
  const int prev = in.byte();
  const bool realSecret = in.byte() & 1;
  RingHello h;
  in.take(&h);
  SocketAddress self = emptySocketAddress();
  in.take(&self);
  if (realSecret) h.proof = ringHelloProof(kSecret, h.rank, self);
  if (ringHelloExpected(h, prev, kSecret, self) && (h.magic != kMagic || h.rank != prev))
    fuzz::fail("a stranger was taken for the predecessor");
}

void p2pHeader(fuzz::Input& in) {
  const int nranks = 1 + in.byte();
  const int me = in.byte() % nranks;
  const bool realProof = in.byte() & 1;
  P2pHeader h;
  in.take(&h);
  if (!p2pHeaderAcceptable(h, me, nranks)) return;
  if (h.from < 0 || h.from >= nranks || h.to != me || h.bytes > kP2pMaxBytes)
    fuzz::fail("a bad message header was accepted");
  std::vector<char> body(h.bytes);  // what the receiver allocates next
  in.takeBytes(body.data(), body.size());
  if (realProof) h.proof = p2pProof(kSecret, h, body.data());
  const bool proven = digestEqual(h.proof, p2pProof(kSecret, h, body.data()));
  if (realProof && !proven) fuzz::fail("a message proven with the secret was refused");
}

void opHeader(fuzz::Input& in) {
  OpHeader mine, theirs;
  in.take(&mine);
  in.take(&theirs);
  if (opHeadersMatch(mine, theirs) != (memcmp(&mine, &theirs, sizeof(mine)) == 0))
    fuzz::fail("headers compare unlike their bytes");
  (void)describeOp(mine);
  (void)describeOp(theirs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  switch (in.byte() % 4) {
    case 0: rootReply(in); break;
    case 1: ringHello(in); break;
    case 2: p2pHeader(in); break;
    default: opHeader(in); break;
  }
  return 0;
}
