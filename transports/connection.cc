#include "transports/connection.h"

#include <cinttypes>
#include <cstdio>

namespace weft {

std::string ConnectionId::shmName() const {
  char buf[96];
  snprintf(buf, sizeof buf, "/weft-%016" PRIx64 "-%c%d-%d-%d", commHash, laneName(lane)[0], channel, senderRank,
           receiverRank);
  return buf;
}

std::string ConnectionId::describe() const {
  return std::string(laneName(lane)) + " lane, channel " + std::to_string(channel) + ", rank " +
         std::to_string(senderRank) + " -> rank " + std::to_string(receiverRank);
}

}  // namespace weft
