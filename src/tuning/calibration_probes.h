// The probes behind the cost model's machine constants (calibration.cc repeats them and takes the
// median). Each call is one repeat, short (a few ms) and bounded: every wait has a deadline, and a
// probe that cannot finish returns a negative number instead of a value.
#pragma once
#include <chrono>
#include <vector>

namespace weft {
namespace probes {

using Clock = std::chrono::steady_clock;
double usSince(Clock::time_point t0);  // microseconds since t0, for the probes' timing

// The CPUs this process may run on, in order.
std::vector<int> allowedCpus();

double copyGBps();        // memcpy of cache-resident buffers by one core
double reduceGBps();      // out = a + b over floats by one core (bytes of out per second)
double stepUs();          // the executor's fixed cost per FIFO piece (a proxy, scaled)
double handoffUs();       // half a round trip of a cache line between two spinning threads
double futexWakeUs();     // half a round trip of two threads that sleep on futexes
double yieldHandoffUs();  // half a round trip of two threads bound to one CPU that yield
double peerReadGBps();    // one core reading what another core has just written
// The host's TCP stack over loopback (calibration_tcp_probes.cc); 0 when this process cannot
// open a loopback connection at all.
double tcpGBps();   // one connection, one direction, bulk
double tcpLatUs();  // half a round trip of a small message

// memcpy bandwidth beyond the caches. The buffers (64 MiB) are made and touched once, so the
// page faults of the first touch are not part of any repeat.
class MemCopy {
 public:
  MemCopy();
  double gBps();

 private:
  std::vector<char> a_, b_;
};

}  // namespace probes
}  // namespace weft
