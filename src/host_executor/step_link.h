// What the host executor's stepping core (chain_runner.h) needs of the world around it, as
// concepts: a link is one direction of a (lane, channel, peer) FIFO, and a fabric hands out a
// rank's links and runs its direct-lane steps. In production the links are transports'
// Connections (connection_fabric.h); the unit tests supply in-memory FIFOs with a few slots and
// step every rank's executor from one thread (tests/unit/program_sim.h), so the protocol they
// check is the one that runs, not a copy of it. The core is a template over the fabric, so the
// production path calls Connection's inline code exactly as before.
#pragma once
#include <concepts>
#include <cstddef>
#include <string>
#include <vector>

#include "host_executor/direct_exec.h"
#include "nccl.h"
#include "program/program.h"
#include "task/task.h"
#include "transports/fifo.h"

namespace weft {

// The executor-facing half of transports/connection.h: connect without blocking, then move
// messages through slots. A link is used from one side only (the sender's or the receiver's).
template <class L>
concept StepLink = requires(L& l, const L& cl, bool* ready, std::string* why, size_t bytes, size_t* got,
                            const OpStamp& stamp) {
  { l.tryConnect(ready, why) } -> std::same_as<ncclResult_t>;
  { cl.connected() } -> std::same_as<bool>;
  { cl.peer() } -> std::same_as<int>;
  // sender side
  { l.canSend(bytes) } -> std::same_as<bool>;  // room for a message of `bytes`
  { l.canSend() } -> std::same_as<bool>;       // room for a message of any size
  { l.sendBuffer(bytes) } -> std::same_as<void*>;
  l.publish(bytes, stamp);
  // receiver side
  { cl.canRecv() } -> std::same_as<bool>;
  { cl.recvBuffer(got) } -> std::same_as<const void*>;
  { cl.recvStamp() } -> std::convertible_to<const OpStamp&>;
  l.release();
};

// A rank's links, made on first use, and its direct lane (direct_exec.h has the meanings).
// handshakes(comm) is where the core keeps comm's links whose setup it began and must finish; it
// lives as long as the links, across runs.
template <class F>
concept StepFabric = StepLink<typename F::Link> &&
    requires(F& f, ncclComm* comm, const Sequence& s, int peer, bool sender, const Task& t, const Step& st,
             size_t* phase, std::string* why, std::vector<int>* waitingOn) {
  { f.link(comm, s, peer, sender) } -> std::same_as<typename F::Link*>;
  { f.handshakes(comm) } -> std::same_as<std::vector<typename F::Link*>&>;
  { f.direct(t, st, phase, why) } -> std::same_as<DirectProgress>;
  { f.describeDirect(t, st, *phase, waitingOn) } -> std::same_as<std::string>;
};

}  // namespace weft
