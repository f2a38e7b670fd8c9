// One established connection of the built-in Socket network, and its data path.
//
// A connection is one control socket plus nData data sockets (NCCL_SOCKET_NTHREADS x
// NCCL_NSOCKS_PERTHREAD). For every message the sender writes an 8-byte size on the control
// socket; messages of at most WEFT_SOCKET_INLINE_BYTES (the sender's setting; the size word says
// which way a message travels) follow it inline there and are moved by whichever thread calls
// isend/test (one socket, no hand-off: no thread switch per message). Larger ones are cut
// into chunks of at least kMinChunk spread round-robin over the data sockets, moved by
// helper threads. The default limit (4 MiB) keeps every FIFO slot inline: on a host whose cores
// the ranks already keep busy, a hand-off to a helper waits for a core, and 2 ranks over loopback
// on 2 cores ran 2-7x slower through the helpers. Both ends walk messages in the same order and
// cut them the same way, so each data socket carries its chunks in the same order on both sides
// and no chunk needs a header.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "sockets/socket.h"

namespace weft::net::socketnet {

// The top bit of a message's size word: its payload follows inline on the control socket.
constexpr uint64_t kInlineFlag = uint64_t(1) << 63;
constexpr size_t kMinChunk = 64 * 1024;  // below this, splitting costs more than it gains
constexpr int kMaxRequests = 32;         // NCCL_NET_MAX_REQUESTS
constexpr int kMaxDataSockets = 64;      // NCCL's limit on threads x sockets per thread
constexpr size_t kReadAhead = 4096;      // the most a receiver reads of the control stream at once
constexpr uint32_t kRearmAcks = 64;      // small messages between two TCP_QUICKACK=0 (see chooseAcks)

class Comm;

// The control socket of a receiving connection, watched by its first worker while `armed`.
struct ControlWatch {
  const Socket* sock = nullptr;
  std::atomic<bool> armed{false};
};

struct Request {
  Comm* comm = nullptr;
  bool inUse = false;
  char* data = nullptr;
  size_t capacity = 0;  // receive: the posted size
  size_t size = 0;      // bytes sent / received (receive: known once the size header arrived)
  uint64_t header = 0;  // the size header, as written or being read
  size_t ctrlDone = 0;  // bytes of header (+ inline payload) moved on the control socket
  bool ctrlFinished = false;
  bool inlinePayload = false;         // the payload travels on the control socket
  std::atomic<int> pendingChunks{0};  // chunks the helper threads still have to move
};

// One helper thread and the data sockets it serves.
class Worker {
 public:
  Worker(Comm* comm, bool send);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  // slot: this worker's index of the socket (from addSocket).
  int addSocket(const Socket* sock);
  void start();
  void post(int slot, char* ptr, size_t len, Request* req);
  void stop();
  // True once the worker has seen the connection fail and dropped its chunks.
  bool quiesced() const { return quiesced_.load(std::memory_order_acquire); }
  void wake();
  // Before start(): also watch this control socket while it is armed (see ControlWatch).
  void watchControl(ControlWatch* watch) { ctrlWatch_ = watch; }

 private:
  struct Chunk {
    int slot;
    char* ptr;
    size_t len;
    size_t done;
    Request* req;
  };
  void run();
  // Moves bytes on one socket's queue; false on a socket error (the comm is then failed).
  bool progress(std::deque<Chunk>& q, const Socket& sock, bool* moved);

  Comm* comm_;
  bool send_;
  int eventFd_ = -1;
  std::vector<const Socket*> socks_;  // owned by the Comm, which outlives its workers
  std::vector<std::deque<Chunk>> queues_;
  std::mutex mu_;
  std::vector<Chunk> incoming_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> quiesced_{false};
  ControlWatch* ctrlWatch_ = nullptr;
  std::thread thread_;
};

class Comm {
 public:
  // ctrl and data are connected sockets; nThreads helper threads serve the data sockets.
  Comm(bool send, Socket ctrl, std::vector<Socket> data, int nThreads);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  bool isSend() const { return send_; }
  const std::string& peer() const { return peer_; }
  int controlFd() const { return ctrl_.fd(); }  // for socket options and the tests that read them
  // *request null when all kMaxRequests are in flight.
  ncclResult_t post(void* data, size_t size, Request** request);
  ncclResult_t test(Request* req, int* done, size_t* size);

  // Marks the connection failed (first cause wins, logged once with the peer's address) and
  // shuts its sockets down so every helper and every later call sees it at once.
  // quiet: log at INFO only (the peer closed cleanly; an error only if someone still waits).
  void fail(ncclResult_t code, const std::string& what, bool quiet = false);
  ncclResult_t failure() const { return failCode_.load(std::memory_order_acquire); }

 private:
  // Moves queued requests' control parts, in order, until `until` has finished its own (null: all
  // that can move now). Called with mu_ held.
  ncclResult_t progressControl(const Request* until);
  void armControlWatch();         // a receive waits for its header: watch for it in event mode
  void postChunks(Request* req);  // called with mu_ held, in message order
  // Receiver: up to `want` bytes of the control stream into dst, from what was read ahead first
  // (mu_ held). Returns what recv would: the bytes moved, 0 at the peer's close, or -1 with errno.
  ssize_t readControl(char* dst, size_t want);
  // Receiver, as a message's header arrives (mu_ held): delayed ACKs while the control stream
  // carries small messages, immediate ones while it carries large inline payloads.
  void chooseAcks(size_t inlineBytes);
  void waitWorkersQuiesced();

  bool send_;
  Socket ctrl_;
  std::vector<Socket> data_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::pair<int, int>> socketOwner_;  // data socket -> (worker, slot)
  std::string peer_;
  std::mutex mu_;
  Request reqs_[kMaxRequests];
  ControlWatch ctrlWatch_;          // receiver: the control socket, for the first worker
  std::deque<Request*> ctrlQueue_;  // posted requests whose control part is not finished
  size_t nextSocket_ = 0;           // round-robin start, advanced identically on both ends
  size_t inlineLimit_;              // sender: messages up to this many bytes go inline
  bool peerClosed_ = false;         // receiver: the sender closed cleanly between messages (guarded by mu_)
  // Receiver: control bytes read ahead of the request they belong to (mu_). One read then takes a
  // small message's header and payload together: a second recv for the payload costs another
  // pass through the kernel's TCP receive path (3.6-4.5 us of an 8-byte AllReduce's 12-16 us over
  // loopback here). The reads stay bounded so that a large inline payload is read in place.
  std::unique_ptr<char[]> ahead_;
  size_t aheadBegin_ = 0, aheadEnd_ = 0;
  enum class AckMode : uint8_t { kDefault, kDelayed, kQuick };
  const bool delayedAcks_;  // receiver with WEFT_SOCKET_DELAYED_ACKS=1
  AckMode ackMode_ = AckMode::kDefault;
  uint32_t smallSinceArm_ = 0;
  std::string tlsStage_;                // TLS sender: the header and inline payload of one message (mu_)
  const Request* tlsStaged_ = nullptr;  // whose message tlsStage_ holds
  std::atomic<ncclResult_t> failCode_{ncclSuccess};
  std::mutex failMu_;
  std::string failText_;
};

// Sets TCP_NODELAY, keepalive and TCP_USER_TIMEOUT so that a dead link fails within timeoutMs.
void configureSocket(int fd, int64_t timeoutMs);
// ncclRemoteError when err means the peer went away, ncclSystemError otherwise.
ncclResult_t errnoResult(int err);

}  // namespace weft::net::socketnet
