// Shared-memory FIFOs over real segments. Spread payloads (connection.h: spreadOffset): where a
// message lands in its slot, that the placement really rotates and always fits. Deep header rings
// (fifo.h): small messages run up to nheaders ahead while large ones wait for a payload slot. In
// both, the sender follows its receiver's choices whatever it was built with, so every byte
// arrives where the receiver looks for it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "transports/connection.h"
#include "transports/shm/shm_connection.h"

namespace weft {
namespace {

constexpr uint32_t kSlots = 8;
constexpr uint32_t kSlotBytes = 512 * 1024;

TEST(FifoSpread, SmallAndLargeMessagesStayAtTheSlotStart) {
  for (uint64_t m = 0; m < 100; ++m) {
    EXPECT_EQ(spreadOffset(m, kSlots, kSlotBytes, 33), 0u);
    EXPECT_EQ(spreadOffset(m, kSlots, kSlotBytes, kSpreadMinBytes - 1), 0u);
    // Rounded up to a power of two, more than half a slot fits once only.
    EXPECT_EQ(spreadOffset(m, kSlots, kSlotBytes, kSlotBytes / 2 + 1), 0u);
    EXPECT_EQ(spreadOffset(m, kSlots, kSlotBytes, kSlotBytes), 0u);
  }
}

TEST(FifoSpread, EverySizeRotatesThroughPositionsThatFit) {
  // Slot sizes from NCCL_BUFFSIZE / 8 need not be powers of two.
  for (uint32_t slotBytes : {kSlotBytes, 500u * 1024, 4096u * 3, 1u << 20}) {
    for (size_t bytes : {size_t(4096), size_t(4097), size_t(32768), size_t(40000), size_t(131072), size_t(200000)}) {
      if (bytes > slotBytes) continue;  // a piece never exceeds its slot
      std::set<size_t> seen;
      for (uint64_t m = 0; m < 4096; ++m) {
        const size_t off = spreadOffset(m, kSlots, slotBytes, bytes);
        ASSERT_LE(off + bytes, slotBytes) << "message " << m << " of " << bytes << " B, slot " << slotBytes;
        ASSERT_EQ(off % 4096, 0u) << "payloads stay page-aligned";
        if (m % kSlots == 3) seen.insert(off);  // one slot's successive uses
        // The messages that share a lap of the slots share a position.
        ASSERT_EQ(off, spreadOffset(m - m % kSlots, kSlots, slotBytes, bytes));
      }
      size_t stride = 4096;
      while (stride < bytes) stride *= 2;
      const size_t fit = slotBytes / stride;
      size_t positions = 1;
      while (positions * 2 <= fit) positions *= 2;
      EXPECT_EQ(seen.size(), fit < 2 ? 1u : positions) << bytes << " B in " << slotBytes << " B slots";
    }
  }
}

struct Link {
  std::unique_ptr<Connection> tx, rx;
};

constexpr FifoGeometry kPlain{kSlots, kSlotBytes};
constexpr FifoGeometry kDeep{kSlots, kSlotBytes, kSlots* kHeaderSlotsPerPayloadSlot, kSmallPayloadBytes};

// One link over a real segment of this process; each end is built with its own geometry and
// spread setting.
Link makeLink(const std::string& tag, bool receiverSpreads, bool senderSpreads, RankBlock* bell,
              const FifoGeometry& receiverGeometry = kPlain, const FifoGeometry& senderGeometry = kPlain) {
  ConnectionId id{0x5eed0000ull + uint64_t(getpid()), Lane::kRing, receiverSpreads ? 1 : 0, 0, 1};
  id.commHash ^= std::hash<std::string>()(tag);
  Link l;
  l.rx = std::make_unique<Connection>(id, false,
                                      std::make_unique<ShmConnection>(id, false, receiverGeometry, bell,
                                                                      receiverSpreads));
  l.tx = std::make_unique<Connection>(id, true,
                                      std::make_unique<ShmConnection>(id, true, senderGeometry, bell, senderSpreads));
  bool ready = false;
  std::string why;
  EXPECT_EQ(l.rx->tryConnect(&ready, &why), ncclSuccess) << why;
  EXPECT_TRUE(ready);
  for (int i = 0; i < 1000 && !l.tx->connected(); ++i) {
    EXPECT_EQ(l.tx->tryConnect(&ready, &why), ncclSuccess) << why;
    if (!ready) usleep(1000);
  }
  EXPECT_TRUE(l.tx->connected());
  return l;
}

// Sends messages of many sizes through the link, the FIFO kept full, and checks each arrives
// whole. Returns the payload offsets (from the data area) the receiver read 32 KiB messages at.
std::set<size_t> pump(Link& l, const std::vector<size_t>& sizes = {8, 100, 4096, 32768, 32768, 5000, 131072, 32768,
                                                                   65536, kSlotBytes}) {
  std::set<size_t> offsets32k;
  const OpStamp stamp{};
  std::vector<unsigned char> want;
  uint64_t sent = 0, received = 0;
  const uint64_t total = 40 * kSlots;
  auto fill = [](uint64_t m, size_t bytes, unsigned char* p) {
    for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(m * 131 + i * 7);
  };
  while (received < total) {
    while (sent < total && l.tx->canSend(sizes[sent % sizes.size()])) {
      const size_t bytes = sizes[sent % sizes.size()];
      fill(sent, bytes, static_cast<unsigned char*>(l.tx->sendBuffer(bytes)));
      l.tx->publish(bytes, stamp);
      ++sent;
    }
    EXPECT_TRUE(l.rx->canRecv());
    size_t got = 0;
    const auto* p = static_cast<const unsigned char*>(l.rx->recvBuffer(&got));
    const size_t bytes = sizes[received % sizes.size()];
    EXPECT_EQ(got, bytes);
    want.resize(bytes);
    fill(received, bytes, want.data());
    EXPECT_EQ(memcmp(p, want.data(), bytes), 0) << "message " << received << " of " << bytes << " B";
    if (bytes == 32768) offsets32k.insert(size_t(p - l.rx->view().data) % kSlotBytes);
    l.rx->release();
    ++received;
  }
  return offsets32k;
}

// A rank block no one sleeps on: ringing it does nothing.
std::unique_ptr<RankBlock> quietBell() {
  auto bell = std::make_unique<RankBlock>();
  memset(static_cast<void*>(bell.get()), 0, sizeof(RankBlock));
  return bell;
}

TEST(FifoSpread, SenderFollowsItsReceiversChoice) {
  auto bell = quietBell();
  for (bool receiverSpreads : {true, false}) {
    for (bool senderSpreads : {true, false}) {
      SCOPED_TRACE(std::string("receiver ") + (receiverSpreads ? "spreads" : "does not") + ", sender built " +
                   (senderSpreads ? "to spread" : "not to"));
      Link l = makeLink(std::to_string(senderSpreads), receiverSpreads, senderSpreads, bell.get());
      EXPECT_EQ(l.rx->view().spreadPayload, receiverSpreads);
      EXPECT_EQ(l.tx->view().spreadPayload, receiverSpreads);
      const std::set<size_t> offsets = pump(l);
      if (receiverSpreads)
        EXPECT_GT(offsets.size(), 4u) << "32 KiB messages rotate through their slots";
      else
        EXPECT_EQ(offsets, std::set<size_t>{0}) << "every message at its slot's start";
    }
  }
}

TEST(FifoDepth, SenderFollowsItsReceiversGeometry) {
  auto bell = quietBell();
  Link l = makeLink("geometry", false, false, bell.get(), kDeep, kPlain);
  for (const FifoView& v : {l.rx->view(), l.tx->view()}) {
    EXPECT_EQ(v.nslots, kSlots);
    EXPECT_EQ(v.nheaders, kDeep.nheaders);
    EXPECT_EQ(v.smallBytes, kSmallPayloadBytes);
  }
  // The sender's pointers are its own mapping; the offsets from the FIFO's start must agree.
  EXPECT_EQ(l.rx->view().small - reinterpret_cast<unsigned char*>(l.rx->view().slots),
            l.tx->view().small - reinterpret_cast<unsigned char*>(l.tx->view().slots));
  EXPECT_EQ(l.rx->view().data - l.rx->view().small, l.tx->view().data - l.tx->view().small);
}

// How many messages of `bytes` the sender publishes before the FIFO has no room, nothing received.
uint64_t runAhead(Connection& tx, size_t bytes) {
  uint64_t n = 0;
  const OpStamp stamp{};
  while (tx.canSend(bytes) && n < 10000) {
    memset(tx.sendBuffer(bytes), 0x5a, bytes);
    tx.publish(bytes, stamp);
    ++n;
  }
  return n;
}

TEST(FifoDepth, SmallMessagesRunAheadLargeOnesWaitForAPayloadSlot) {
  auto bell = quietBell();
  for (size_t bytes : {size_t(8), size_t(kInlineBytes), size_t(kInlineBytes + 1), size_t(kSmallPayloadBytes)}) {
    Link deep = makeLink("small" + std::to_string(bytes), false, false, bell.get(), kDeep, kDeep);
    EXPECT_EQ(runAhead(*deep.tx, bytes), kDeep.nheaders) << bytes << " B messages need header slots only";
    Link plain = makeLink("plain" + std::to_string(bytes), false, false, bell.get(), kPlain, kPlain);
    EXPECT_EQ(runAhead(*plain.tx, bytes), kSlots) << bytes << " B messages, one header per payload slot";
  }
  Link large = makeLink("large", false, false, bell.get(), kDeep, kDeep);
  EXPECT_EQ(runAhead(*large.tx, kSmallPayloadBytes + 1), kSlots)
      << "a message past the small area takes a payload slot";
  // Behind small messages, a large one waits until the receiver is within nslots of the sender.
  Link mixed = makeLink("mixed", false, false, bell.get(), kDeep, kDeep);
  EXPECT_EQ(runAhead(*mixed.tx, 8), kDeep.nheaders);
  EXPECT_FALSE(mixed.tx->canSend(4096));
  for (uint32_t i = 0; i < kDeep.nheaders - kSlots; ++i) {
    ASSERT_TRUE(mixed.rx->canRecv());
    mixed.rx->release();
    EXPECT_FALSE(mixed.tx->canSend(4096)) << "after " << i + 1 << " messages received";
  }
  ASSERT_TRUE(mixed.rx->canRecv());
  mixed.rx->release();
  EXPECT_TRUE(mixed.tx->canSend(4096));
}

TEST(FifoDepth, MixedSizesArriveWholeThroughEveryArea) {
  auto bell = quietBell();
  for (bool spread : {false, true}) {
    Link l = makeLink(std::string("mixed sizes") + (spread ? " spread" : ""), spread, spread, bell.get(), kDeep,
                      kPlain);
    pump(l, {8, 33, 100, 512, 513, 8, 4096, 24, 32768, 448, 131072, 64});
    // The small area is used: a 100 B message is read between the headers and the data area.
    const OpStamp stamp{};
    ASSERT_TRUE(l.tx->canSend(100));
    memset(l.tx->sendBuffer(100), 1, 100);
    l.tx->publish(100, stamp);
    ASSERT_TRUE(l.rx->canRecv());
    size_t got = 0;
    const auto* p = static_cast<const unsigned char*>(l.rx->recvBuffer(&got));
    EXPECT_EQ(got, 100u);
    EXPECT_GE(p, l.rx->view().small);
    EXPECT_LT(p, l.rx->view().data);
    l.rx->release();
  }
}

TEST(FifoDepth, ASenderRefusesAnImpossibleGeometry) {
  auto bell = quietBell();
  ConnectionId id{0x5eed1000ull + uint64_t(getpid()), Lane::kRing, 0, 0, 1};
  Connection rx(id, false, std::make_unique<ShmConnection>(id, false, kDeep, bell.get(), false));
  bool ready = false;
  std::string why;
  ASSERT_EQ(rx.tryConnect(&ready, &why), ncclSuccess) << why;
  // The receiver's header claims fewer headers than payload slots: a sender that believed it
  // would reuse a header slot the receiver has not read.
  auto* header = reinterpret_cast<FifoHeader*>(reinterpret_cast<unsigned char*>(rx.view().head) - 64);
  header->nheaders = kSlots - 1;
  Connection tx(id, true, std::make_unique<ShmConnection>(id, true, kPlain, bell.get(), false));
  ncclResult_t r = ncclSuccess;
  for (int i = 0; i < 1000 && r == ncclSuccess && !tx.connected(); ++i) {
    r = tx.tryConnect(&ready, &why);
    if (r == ncclSuccess && !ready) usleep(1000);
  }
  EXPECT_EQ(r, ncclInternalError);
  EXPECT_NE(why.find("impossible FIFO"), std::string::npos) << why;
  EXPECT_FALSE(tx.connected());
}

}  // namespace
}  // namespace weft
