// TLS 1.3 with an external pre-shared key over Weft's own TCP sockets: the bootstrap and the Socket
// network. A process turns it on with ncclSetEncryption (or WEFT_TLS_KEY_FILE); from then on every
// socket that Socket::connect or Socket::accept makes, or that startTls marks, carries a TlsLink,
// and Socket's transfers go through it (socket.h). No certificates: both ends prove that they hold
// the key, and each connection gets fresh traffic keys (PSK with (EC)DHE, AES-128-GCM).
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "nccl.h"
#include "sockets/deadline.h"

namespace weft {

struct TlsContext;  // the loaded library, both SSL_CTXs and the derived key (tls.cc)

// The shortest key ncclSetEncryption and WEFT_TLS_KEY_FILE accept, in bytes.
constexpr size_t kTlsMinKeyBytes = 32;

// Sets the process's encryption: psk null turns it off, otherwise it must hold at least
// kTlsMinKeyBytes. Loads OpenSSL at once, so a machine or build without it fails here
// (ncclSystemError / ncclInvalidUsage) and never falls back to plaintext. Sockets made earlier keep
// the setting they were made with.
ncclResult_t tlsSetKey(const char* psk, std::string* why);

// The setting new sockets get: *ctx null means plaintext. Until tlsSetKey is called it comes from
// WEFT_TLS_KEY_FILE (read once); a key file that cannot be used is an error, not plaintext.
ncclResult_t tlsCurrent(std::shared_ptr<TlsContext>* ctx, std::string* why);
// Whether new sockets are encrypted (false also when tlsCurrent fails).
bool tlsEnabled();

// For a socket without TLS: when the peer's first bytes are a TLS record, the text to add to the
// error (the peer has encryption on, this process has it off); "" otherwise.
std::string tlsPlaintextHint(const void* firstBytes, size_t n);

enum class TlsRole { kClient, kServer };

// One connection's TLS state over a non-blocking socket it does not own (unless adoptFd). Every
// member takes the link's mutex itself except those named *Locked, which expect it held; Socket's
// transfers and the flusher thread (tls_flusher.cc) share a link this way.
class TlsLink {
 public:
  static ncclResult_t create(std::shared_ptr<TlsContext> ctx, int fd, TlsRole role, const std::string& peer,
                             std::shared_ptr<TlsLink>* out, std::string* why);
  ~TlsLink();
  TlsLink(const TlsLink&) = delete;
  TlsLink& operator=(const TlsLink&) = delete;

  // send(2)/recv(2) with MSG_DONTWAIT over TLS: bytes moved; 0 from recvLocked when the peer closed;
  // -1 with errno EAGAIN (wait for wantEvents()), EPROTO (TLS failed: error() says why, naming the
  // peer) or the socket's own errno. Data queued by queueLocked goes out first.
  ssize_t sendLocked(const void* data, size_t len);
  ssize_t recvLocked(void* data, size_t len);
  // What the last EAGAIN waits for: POLLIN or POLLOUT. These three read state that the mutex
  // guards: the caller holds it.
  short wantEvents() const { return want_; }
  bool handshakeDone() const { return handshakeDone_; }
  const std::string& error() const { return error_; }

  // Keeps bytes to send once the handshake is done (see Socket::sendAll); flushLocked moves what it
  // can: true while all is well, false on a failure (error()). Queueing hands the link to the
  // flusher until its owner's next sendLocked/recvLocked takes it back: only one of them drives
  // it at a time, so the owner's poll() always waits for what its own last call wanted.
  void queueLocked(const void* data, size_t len, Deadline deadline);
  bool ownerDrivesLocked() const { return ownerDrives_; }
  // The owner takes the link back from the flusher without a transfer (Socket::finishQueued).
  void claimLocked() { ownerDrives_ = true; }
  bool flushLocked();
  bool queuedLocked() const { return queued_.size() > queuedDone_; }
  Deadline queueDeadline() const { return queueDeadline_; }

  std::mutex& mutex() { return mu_; }
  int fd() const { return fd_; }
  // The socket closed under the link (its owner went away): the flusher drops it. With the mutex.
  void detachLocked() { fd_ = -1; }
  // The link owns the descriptor from now on and closes it when destroyed. With the mutex.
  void adoptFdLocked() {
    ownsFd_ = true;
    ownerDrives_ = false;
  }
  const std::string& peer() const { return peer_; }

  // Hooks of the socket BIO (tls.cc), public only so that its C callbacks can reach them.
  int bioWrite(const char* buf, int len);
  int bioRead(char* buf, int len);

 private:
  TlsLink() = default;
  // Moves the handshake on: 1 done, 0 wait (errno EAGAIN), -1 failed (errno set).
  int handshakeLocked();
  ssize_t failure(int rc, const char* what, bool reading);

  std::mutex mu_;
  std::shared_ptr<TlsContext> ctx_;
  void* ssl_ = nullptr;  // SSL*, kept opaque so that this header needs no OpenSSL
  int fd_ = -1;
  bool ownsFd_ = false;
  TlsRole role_ = TlsRole::kClient;
  std::string peer_;
  bool handshakeDone_ = false;
  bool ownerDrives_ = false;  // the owner's transfers have taken the link back from the flusher
  short want_ = 0;
  bool eof_ = false;   // the socket read returned 0
  size_t wrote_ = 0;   // bytes written to the socket so far
  int sysErr_ = 0;     // errno of the socket's last failed read or write
  std::string error_;  // why the link failed
  std::string queued_;
  size_t queuedDone_ = 0;
  Deadline queueDeadline_;
};

// Hands a link with queued bytes to the flusher thread, which moves them while nobody else uses the
// link (the peer may answer the handshake only after this thread has gone on to wait for something
// else) and closes the descriptor once done when the link owns it (tls_flusher.cc).
void tlsFlushInBackground(const std::shared_ptr<TlsLink>& link);

}  // namespace weft
