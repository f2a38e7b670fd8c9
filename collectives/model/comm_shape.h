// What an algorithm knows of the communicator it runs on. Algorithms never see ncclComm: the
// caller (src/comm/comm_algorithms.cc, for src/enqueue/group.cc and the tuner's init) fills this
// from it, so collectives/ stays below the communicator and tests can describe a communicator
// without making one.
#pragma once
#include <cstdint>

#include "base/params.h"
#include "transports/shm/direct_area.h"

namespace weft {

struct CommShape {
  int rank = 0;
  int nranks = 1;
  // Ranks of the communicator on this rank's host, itself included (0 where local peers were never
  // set up). The direct lane needs every rank here.
  int nLocal = 0;
  // Some rank runs on another host: the same on every rank (nLocal is not: weft-info leaves it 0).
  bool spansHosts = false;
  int nChannels = 1;     // the communicator's channels: the most one collective may use
  bool hostMode = true;  // the host executor runs its operations (false: the GPU executor)
  // Some ranks run on GPUs and others in host mode (the same on every rank): their executors
  // cannot share direct-lane staging areas.
  bool mixedExecutors = false;
  uint32_t slotBytes = 0;  // one FIFO slot: the most a ring or tree step moves per piece
  // The settings rank 0 put in force at init. Choosing code reads these, never a per-rank value,
  // so that every rank decides the same (src/comm/agreement.h).
  const param::Agreed* agreed = nullptr;
  // The direct lane's staging areas: their size and the round counter that builders advance.
  // Null where nothing is built (selection, weft-info).
  DirectAreas* direct = nullptr;

  bool allRanksLocal() const { return nLocal == nranks; }
};

}  // namespace weft
