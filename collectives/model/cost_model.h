// The cost model: an estimated time for one collective run with one (algorithm, protocol,
// channel count), from the shape of the communicator (ranks, hosts, link class) and the machine's
// constants (src/tuning/calibration.h measures them). Every formula is "latency terms + bytes /
// bandwidth". Each algorithm's formula lives in its folder (its registry descriptor's `cost`) and
// is built from the shared pieces of cost_path.h; this file holds what all of them share.
#pragma once
#include <cstddef>
#include <cstdint>

#include "task/algorithm.h"
#include "task/task.h"

namespace weft {

// How the ranks of one host reach each other. Shared memory on one NUMA node is what host mode
// measures; the topology detection sets the others when it knows better (a ring that crosses
// sockets pays the cross-NUMA costs). kNet is the link between hosts.
enum class LinkClass : uint8_t { kShm, kShmCrossNuma, kNet, kCount };
const char* linkClassName(LinkClass c);

// The machine's constants, in microseconds and GB/s (1 GB/s = 1000 bytes/us). The tuner's
// calibration (src/tuning/calibration.cc) measures the first eight and the network's two (the host's
// TCP stack; each rank's network device may lower them, src/tuning/tuner_setup.h); the cache size
// comes from the CPU, the cross-NUMA scales are defaults. Every field can be overridden with
// WEFT_TUNER_CONSTANTS ("name=value,...").
struct HostConstants {
  double copyGBps = 8.0;           // memcpy of cache-resident data by one core
  double reduceGBps = 5.0;         // out = a + b over floats by one core (bytes of out per second)
  double handoffUs = 0.15;         // a cache line written by one core seen by another
  double stepUs = 0.10;            // the executor's fixed cost of moving one FIFO piece
  double futexWakeUs = 6.0;        // waking a sleeping rank
  double yieldHandoffUs = 3.0;     // a handoff between two ranks that share a core (they yield to each other)
  double memGBps = 8.0;            // memcpy of buffers larger than the caches by one core
  double peerReadGBps = 4.0;       // one core reading data another core just wrote (direct reads)
  double cacheMiB = 16.0;          // working sets beyond this stream from memory
  double netGBps = 10.0;           // one network connection between hosts
  double netLatUs = 15.0;          // one small network message between hosts
  double crossNumaBwScale = 0.6;   // kShmCrossNuma bandwidth = copyGBps x this
  double crossNumaLatScale = 2.0;  // kShmCrossNuma latency = handoffUs x this
};

// One named field of HostConstants, for printing, the cache file and WEFT_TUNER_CONSTANTS.
struct ConstantField {
  const char* name;
  double HostConstants::*field;
  const char* doc;
  bool higherIsFaster;  // a bandwidth or capacity (else a latency or cost): how hosts combine
};
extern const ConstantField kConstantFields[];
extern const int kNumConstantFields;

// The shape of a communicator, as far as the model cares.
struct ModelInput {
  int nranks = 1;
  int nHosts = 1;
  int ranksPerHost = 1;  // the largest number of ranks on one host
  // The largest number of ranks sharing one machine's cores: more than ranksPerHost where several
  // "hosts" run on one machine (containers, WEFT_HOST_ID), whose ranks still take turns on its cores.
  int ranksPerMachine = 1;
  int cores = 1;                          // cores this process may run on
  LinkClass intraLink = LinkClass::kShm;  // within a host; topology detection may change it
  int minChannels = 1;
  int maxChannels = 1;
  size_t slotBytes = 128 * 1024;  // FIFO slot: the piece size of ring and tree schedules
  size_t oneShotMaxBytes = 0;     // the one-shot ring's limit per rank (0 = never)
  // Bit j set: in round j of recursive doubling and halving-doubling, every rank's partner is on
  // its host (ranks numbered host by host have the low bits within hosts). On a number of ranks
  // that is not a power of two, the rounds' numbering (rank_fold.h), and sameHostFold: every pair
  // that folds into one shares a host.
  uint32_t sameHostPartnerBits = 0;
  bool sameHostFold = true;
  // GPU ranks: every channel is a thread block of its own, so channels run side by side instead
  // of taking turns on one thread.
  bool channelsInParallel = false;
};

// The collectives the tuner chooses for (point-to-point patterns have one way to run).
constexpr int kNumTunedColls = 7;
// 0..6 for AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AllGatherv, ReduceScatterv; -1
// for the others. The uneven kinds are costed at their total size as if split evenly: the tuner's
// table has one size axis, and the total is a value every rank agrees on.
int tunedCollIndex(CollKind k);
CollKind tunedCollKind(int index);

// A point-to-point transfer of nBytes (ncclGroupSimulateEnd).
double estimateP2pUs(const ModelInput& in, const HostConstants& hc, size_t nBytes, bool crossHost);

}  // namespace weft
