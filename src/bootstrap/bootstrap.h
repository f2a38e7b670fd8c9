// Out-of-band rendezvous and collectives over TCP: the unique id, the root that gathers every rank's
// address, and the allgather/barrier that communicator setup (and ncclCommSplit) use.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "nccl.h"
#include "sockets/address.h"

namespace weft {

class Bootstrap {
 public:
  // Joins the rendezvous described by id (or NCCL_COMM_ID when set: then rank 0 hosts the root).
  // Fails with a message (for ncclGetLastError via *why) when the secret is refused, nranks or
  // rank disagree with the others, a rank is duplicated, or ranks are missing after timeoutMs
  // (the message lists which).
  static ncclResult_t create(const ncclUniqueId& id, int rank, int nranks, int64_t timeoutMs,
                             std::unique_ptr<Bootstrap>* out, std::string* why);
  // The same, interruptible: when cancelFd (a descriptor such as weft::CancelEvent's) becomes
  // readable, the waits of this setup end at once with ncclRemoteError. For a non-blocking init
  // that ncclCommAbort must be able to stop before the Bootstrap object exists.
  static ncclResult_t create(const ncclUniqueId& id, int rank, int nranks, int64_t timeoutMs, int cancelFd,
                             std::unique_ptr<Bootstrap>* out, std::string* why);
  virtual ~Bootstrap() = default;

  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  // In place: rank r's bytes are at data + r*bytesPerRank; on return every slot is filled.
  virtual ncclResult_t allGather(void* data, size_t bytesPerRank, std::string* why) = 0;
  virtual ncclResult_t barrier(std::string* why) = 0;
  // Point-to-point messages, for connection setup that only two ranks take part in (the network
  // transport's connection handles). send() delivers `bytes` tagged with `tag` to rank `peer`
  // (bounded by the timeout; the peer need not be waiting). tryRecv() never blocks: it collects
  // whatever messages have arrived and, when the one from `peer` with `tag` is there, copies it out
  // (exactly `bytes` long, else an error) and sets *got. Thread-safe with each other, not with
  // allGather/barrier's own sockets (which they do not use).
  virtual ncclResult_t send(int peer, uint64_t tag, const void* data, size_t bytes, std::string* why) = 0;
  // The same with its own bound (ms) on the connect instead of the communicator's timeout: for
  // best-effort notes (mismatch stamps and reports) and retried short attempts (the network's
  // connection handles) to a peer that may have left already, whose address then refuses
  // connections until the bound. A message that got connected still has the whole timeout to go
  // out (under TLS it waits for the peer's handshake): success means it will arrive.
  virtual ncclResult_t sendWithin(int peer, uint64_t tag, const void* data, size_t bytes, int64_t timeoutMs,
                                  std::string* why) = 0;
  virtual ncclResult_t tryRecv(int peer, uint64_t tag, void* data, size_t bytes, bool* got, std::string* why) = 0;
  // Where this rank's peers reach it (its point-to-point messages arrive there).
  virtual SocketAddress listenAddress() const = 0;
  // Makes every current and future call return ncclRemoteError promptly (ncclCommAbort).
  virtual void abort() = 0;
};

}  // namespace weft
