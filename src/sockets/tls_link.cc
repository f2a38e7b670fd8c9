// One connection's TLS: the socket BIO, the non-blocking handshake and the transfers (tls.h).
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "sockets/text.h"
#include "sockets/tls_context.h"

namespace weft {

#if WEFT_HAVE_OPENSSL

namespace {

constexpr int kWouldBlock = -2;  // bioRead/bioWrite: the socket is not ready

const char kAlikeHint[] = "; every rank must set the same key (ncclSetEncryption or WEFT_TLS_KEY_FILE), or none";

SSL* sslOf(void* p) { return static_cast<SSL*>(p); }

}  // namespace

const TlsLibrary* gTlsBioLibrary = nullptr;

int tlsBioWrite(BIO* b, const char* buf, int len) {
  const TlsLibrary* lib = gTlsBioLibrary;
  lib->BIO_clear_flags(b, BIO_FLAGS_RWS | BIO_FLAGS_SHOULD_RETRY);
  int n = static_cast<TlsLink*>(lib->BIO_get_data(b))->bioWrite(buf, len);
  if (n != kWouldBlock) return n;
  lib->BIO_set_flags(b, BIO_FLAGS_WRITE | BIO_FLAGS_SHOULD_RETRY);
  return -1;
}

int tlsBioRead(BIO* b, char* buf, int len) {
  const TlsLibrary* lib = gTlsBioLibrary;
  lib->BIO_clear_flags(b, BIO_FLAGS_RWS | BIO_FLAGS_SHOULD_RETRY);
  int n = static_cast<TlsLink*>(lib->BIO_get_data(b))->bioRead(buf, len);
  if (n != kWouldBlock) return n;
  lib->BIO_set_flags(b, BIO_FLAGS_READ | BIO_FLAGS_SHOULD_RETRY);
  return -1;
}

long tlsBioCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

ncclResult_t TlsLink::create(std::shared_ptr<TlsContext> ctx, int fd, TlsRole role, const std::string& peer,
                             std::shared_ptr<TlsLink>* out, std::string* why) {
  const TlsLibrary* lib = ctx->lib;
  std::shared_ptr<TlsLink> l(new TlsLink());
  SSL* ssl = lib->SSL_new(role == TlsRole::kClient ? ctx->client : ctx->server);
  BIO* bio = ssl ? lib->BIO_new(ctx->bio) : nullptr;
  if (!bio) {
    if (ssl) lib->SSL_free(ssl);
    *why = "creating a TLS session for " + peer + " failed: " + tlsErrorQueueText(*lib);
    return ncclSystemError;
  }
  lib->BIO_set_data(bio, l.get());
  lib->BIO_set_init(bio, 1);
  lib->SSL_set_bio(ssl, bio, bio);  // the SSL owns the BIO from here
  if (role == TlsRole::kClient)
    lib->SSL_set_connect_state(ssl);
  else
    lib->SSL_set_accept_state(ssl);
  l->ctx_ = std::move(ctx);
  l->ssl_ = ssl;
  l->fd_ = fd;
  l->role_ = role;
  l->peer_ = peer;
  *out = std::move(l);
  return ncclSuccess;
}

TlsLink::~TlsLink() {
  if (ssl_) ctx_->lib->SSL_free(sslOf(ssl_));
  if (ownsFd_ && fd_ >= 0) ::close(fd_);
}

int TlsLink::bioWrite(const char* buf, int len) {
  for (;;) {
    ssize_t n = fd_ < 0 ? -1 : ::send(fd_, buf, static_cast<size_t>(len), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) {
      wrote_ += static_cast<size_t>(n);
      return static_cast<int>(n);
    }
    int err = fd_ < 0 ? EBADF : errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return kWouldBlock;
    sysErr_ = err;
    return -1;
  }
}

int TlsLink::bioRead(char* buf, int len) {
  for (;;) {
    ssize_t n = fd_ < 0 ? -1 : ::recv(fd_, buf, static_cast<size_t>(len), MSG_DONTWAIT);
    if (n > 0) return static_cast<int>(n);
    if (n == 0) {
      eof_ = true;
      return 0;
    }
    int err = fd_ < 0 ? EBADF : errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return kWouldBlock;
    sysErr_ = err;
    return -1;
  }
}

int TlsLink::handshakeLocked() {
  if (handshakeDone_) return 1;
  if (!error_.empty()) {
    errno = EPROTO;
    return -1;
  }
  const TlsLibrary* lib = ctx_->lib;
  SSL* ssl = sslOf(ssl_);
  lib->ERR_clear_error();
  sysErr_ = 0;
  int rc = lib->SSL_do_handshake(ssl);
  if (rc == 1) {
    // Only a handshake that used the key proves that the peer holds it.
    if (lib->SSL_session_reused(ssl) != 1) {
      error_ = "TLS handshake with " + peer_ + " did not use the pre-shared key" + kAlikeHint;
      errno = EPROTO;
      return -1;
    }
    handshakeDone_ = true;
    return 1;
  }
  int e = lib->SSL_get_error(ssl, rc);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    want_ = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    errno = EAGAIN;
    return 0;
  }
  std::string what = tlsErrorQueueText(*lib);
  if (eof_)
    what = "the peer closed the connection during the handshake" + (what.empty() ? "" : " (" + what + ")");
  else if (sysErr_ != 0)
    what = sockets_detail::errnoString(sysErr_) + (what.empty() ? "" : " (" + what + ")");
  else if (what.empty())
    what = "OpenSSL error " + std::to_string(e);
  error_ = "TLS handshake with " + peer_ +
           (role_ == TlsRole::kClient ? " (this side connected)" : " (it connected here)") + " failed: " + what +
           kAlikeHint;
  if (role_ == TlsRole::kServer && wrote_ == 0 && fd_ >= 0) {
    // OpenSSL answered nothing: the peer's first bytes were no TLS. A protocol_version alert, in
    // the clear as alerts before a handshake are, lets a plaintext Weft peer say what is wrong
    // (tlsPlaintextHint) instead of seeing the connection merely close.
    static const unsigned char kAlert[] = {21, 3, 3, 0, 2, 2, 70};
    (void)!::send(fd_, kAlert, sizeof(kAlert), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  errno = EPROTO;
  return -1;
}

ssize_t TlsLink::failure(int rc, const char* what, bool reading) {
  const TlsLibrary* lib = ctx_->lib;
  int e = lib->SSL_get_error(sslOf(ssl_), rc);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    want_ = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    errno = EAGAIN;
    return -1;
  }
  // The peer's close, with or without TLS's close_notify, reads as end of stream like recv(2)'s 0.
  if (e == SSL_ERROR_ZERO_RETURN || eof_) {
    lib->ERR_clear_error();
    if (reading) return 0;
    errno = EPIPE;
    return -1;
  }
  if (sysErr_ != 0) {
    lib->ERR_clear_error();
    errno = sysErr_;
    return -1;
  }
  std::string text = tlsErrorQueueText(*lib);
  error_ = std::string("TLS ") + what + " with " + peer_ +
           " failed: " + (text.empty() ? "OpenSSL error " + std::to_string(e) : text);
  errno = EPROTO;
  return -1;
}

ssize_t TlsLink::sendLocked(const void* data, size_t len) {
  ownerDrives_ = true;
  if (queuedLocked()) {
    if (!flushLocked()) {
      errno = EPROTO;
      return -1;
    }
    if (queuedLocked()) {
      errno = EAGAIN;
      return -1;
    }
  }
  if (handshakeLocked() <= 0) return -1;
  if (len == 0) return 0;
  const TlsLibrary* lib = ctx_->lib;
  lib->ERR_clear_error();
  sysErr_ = 0;
  size_t n = 0;
  int rc = lib->SSL_write_ex(sslOf(ssl_), data, len, &n);
  if (rc == 1) return static_cast<ssize_t>(n);
  return failure(rc, "send", false);
}

ssize_t TlsLink::recvLocked(void* data, size_t len) {
  ownerDrives_ = true;
  if (handshakeLocked() <= 0) return -1;
  // What waits to go out goes first: the peer's answer may depend on it. Only after the handshake
  // step: a call whose handshake completes must send the queue before its caller polls for the
  // answer, since nothing else will send it then.
  if (queuedLocked() && !flushLocked()) {
    errno = EPROTO;
    return -1;
  }
  if (len == 0) return 0;
  const TlsLibrary* lib = ctx_->lib;
  lib->ERR_clear_error();
  sysErr_ = 0;
  size_t n = 0;
  int rc = lib->SSL_read_ex(sslOf(ssl_), data, len, &n);
  if (rc == 1) return static_cast<ssize_t>(n);
  ssize_t r = failure(rc, "receive", true);
  // Bytes still queued (the socket was full) need room as much as the answer needs to arrive.
  if (r < 0 && errno == EAGAIN && queuedLocked()) want_ |= POLLOUT;
  return r;
}

void TlsLink::queueLocked(const void* data, size_t len, Deadline deadline) {
  if (queuedDone_ == queued_.size()) {
    queued_.clear();
    queuedDone_ = 0;
  }
  queued_.append(static_cast<const char*>(data), len);
  queueDeadline_ = deadline;
  ownerDrives_ = false;
}

bool TlsLink::flushLocked() {
  int h = handshakeLocked();
  if (h <= 0) return h == 0;
  const TlsLibrary* lib = ctx_->lib;
  while (queuedLocked()) {
    lib->ERR_clear_error();
    sysErr_ = 0;
    size_t n = 0;
    int rc = lib->SSL_write_ex(sslOf(ssl_), queued_.data() + queuedDone_, queued_.size() - queuedDone_, &n);
    if (rc == 1) {
      queuedDone_ += n;
      continue;
    }
    if (failure(rc, "send", false) < 0 && errno == EAGAIN) return true;
    if (error_.empty()) error_ = "sending to " + peer_ + " failed: " + sockets_detail::errnoString(errno);
    return false;
  }
  queued_.clear();
  queuedDone_ = 0;
  return true;
}

#else

ncclResult_t TlsLink::create(std::shared_ptr<TlsContext>, int, TlsRole, const std::string&, std::shared_ptr<TlsLink>*,
                             std::string* why) {
  *why = "this build of Weft has no TLS support";
  return ncclInvalidUsage;
}
TlsLink::~TlsLink() = default;
int TlsLink::bioWrite(const char*, int) { return -1; }
int TlsLink::bioRead(char*, int) { return -1; }
int TlsLink::handshakeLocked() { return -1; }
ssize_t TlsLink::failure(int, const char*, bool) { return -1; }
ssize_t TlsLink::sendLocked(const void*, size_t) {
  errno = EPROTO;
  return -1;
}
ssize_t TlsLink::recvLocked(void*, size_t) {
  errno = EPROTO;
  return -1;
}
void TlsLink::queueLocked(const void*, size_t, Deadline) {}
bool TlsLink::flushLocked() { return false; }

#endif

}  // namespace weft
