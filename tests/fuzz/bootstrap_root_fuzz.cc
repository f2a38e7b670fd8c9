// The bootstrap root's verdicts on the hellos connections send it (src/bootstrap/rendezvous.h):
// a stream of hellos and the challenges they answer, each after a control byte that says whether to
// give it a valid proof of the root's secret and the real magic (so the fuzzer reaches past the checks that guard
// everything else), whether an admitted rank's connection then drops, and whether a large nranks stays large. After
// every step the bookkeeping must add up, and a complete table must be one every rank accepts.
#include <cstdint>
#include <cstring>

#include "bootstrap/protocol.h"
#include "bootstrap/rendezvous.h"
#include "fuzz_input.h"

using namespace weft;
using namespace weft::bootstrap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const Secret secret{{0x0123456789abcdefull, 0xfedcba9876543210ull}};
  Rendezvous rdv(secret, "192.0.2.1:4000");
  for (int step = 0; step < 64 && in.left() > 0; step++) {
    const uint8_t control = in.byte();
    RootHello hello;
    in.take(&hello);
    RootChallenge challenge;
    in.take(&challenge);
    if (control & 2) {
      hello.magic = kMagic;
      hello.version = kProtocolVersion;
    }
    // A table of a million ranks takes milliseconds to make: keep most inputs small, so the
    // fuzzer spends its time on the logic (bits 3-5 all set keep the size as it is).
    if (hello.nranks > 1024 && hello.nranks <= kMaxRanks && (control & 0x38) != 0x38)
      hello.nranks = 1 + hello.nranks % 1024;
    // The proof a holder of the secret would send (last: it covers every field above).
    if (control & 1) hello.proof = rootHelloProof(secret, challenge, hello);
    const bool wasStarted = rdv.started();
    const int before = rdv.arrived();
    Rendezvous::Verdict v = rdv.admit(hello, challenge, "198.51.100.7:5000");
    if (v.action != Rendezvous::Action::kAdmit && v.text.empty()) fuzz::fail("a refusal without a reason");
    if (v.action == Rendezvous::Action::kAdmit) {
      if (!rdv.holds(hello.rank) || rdv.arrived() != before + 1) fuzz::fail("an admitted rank holds no slot");
      if (!socketAddressValid(rdv.table()[hello.rank])) fuzz::fail("an admitted rank has no address");
      if (control & 4) rdv.leave(hello.rank);
    }
    if (wasStarted && !rdv.started()) fuzz::fail("a started rendezvous forgot its size");
    if (rdv.started()) {
      int held = 0;
      for (int r = 0; r < rdv.nranks(); r++) held += rdv.holds(r);
      if (held != rdv.arrived()) fuzz::fail("arrived() differs from the slots held");
      if (rdv.missing().size() != size_t(rdv.nranks() - held)) fuzz::fail("missing() differs from the slots free");
      if (rdv.table().size() != size_t(rdv.nranks())) fuzz::fail("the table is not nranks long");
    }
    if (rdv.complete()) {
      // What the root sends every rank then, checked as a rank checks it.
      RootReply reply{};
      reply.magic = kMagic;
      reply.code = kRootOk;
      reply.nranks = rdv.nranks();
      reply.textLen = static_cast<uint32_t>(rdv.table().size() * sizeof(SocketAddress));
      if (!rootReplyProblem(reply, rdv.nranks()).empty()) fuzz::fail("a rank refuses the root's complete table");
      for (const SocketAddress& a : rdv.table()) (void)socketAddressToString(a);
      break;
    }
  }
  return 0;
}
