// What tls.cc and tls_link.cc share: the process's OpenSSL contexts and the socket BIO's callbacks.
#pragma once
#include "sockets/tls.h"
#include "sockets/tls_library.h"

namespace weft {

// fork(): tls.cc takes every lock of the TLS layer before a fork and releases it after, in parent
// and child, so a child never inherits a lock held by a thread that did not come along. phase: 0
// before the fork, 1 after it in the parent, 2 after it in the child. The child also gets no flusher
// thread: it forgets the parent's flusher and starts its own when it needs one.
void tlsLibraryAtFork(int phase);
void tlsFlusherAtFork(int phase);

#if WEFT_HAVE_OPENSSL

struct TlsContext {
  const TlsLibrary* lib = nullptr;
  SSL_CTX* client = nullptr;
  SSL_CTX* server = nullptr;
  BIO_METHOD* bio = nullptr;  // shared by all contexts of the process, never freed
  unsigned char key[32] = {};
  TlsContext() = default;
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  ~TlsContext();
};

// The BIO that moves a link's TLS records over its non-blocking socket (send with MSG_NOSIGNAL,
// so a vanished peer is an error and never SIGPIPE). Its data pointer is the TlsLink.
int tlsBioWrite(BIO* b, const char* buf, int len);
int tlsBioRead(BIO* b, char* buf, int len);
long tlsBioCtrl(BIO* b, int cmd, long num, void* ptr);
// The library the BIO callbacks call (set when the first context is made).
extern const TlsLibrary* gTlsBioLibrary;

#else

struct TlsContext {};

#endif

}  // namespace weft
