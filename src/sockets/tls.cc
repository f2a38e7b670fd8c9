// TLS for Weft's sockets: the process's setting (ncclSetEncryption, WEFT_TLS_KEY_FILE), the OpenSSL
// contexts and the PSK callbacks (tls.h). One connection's state and transfers are in tls_link.cc.
#include "sockets/tls.h"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/params.h"
#include "sockets/text.h"
#include "sockets/tls_context.h"

namespace weft {

namespace {

std::mutex gMu;
std::mutex gMakeMu;     // serializes makeContext (the shared BIO method is made once)
bool gApiSet = false;   // tlsSetKey was called: WEFT_TLS_KEY_FILE no longer counts
bool gEnvRead = false;  // WEFT_TLS_KEY_FILE was looked at
// These two are never destroyed: the detached bootstrap root may make a socket while the
// process's static destructors run.
std::shared_ptr<TlsContext>& gCtx = *new std::shared_ptr<TlsContext>();
ncclResult_t gEnvResult = ncclSuccess;  // the key file's verdict, repeated to every caller
std::string& gEnvWhy = *new std::string();

// Locks in the order the code nests them: gMu, gMakeMu, the library's; the flusher's apart.
void atForkPrepare() {
  gMu.lock();
  gMakeMu.lock();
  tlsLibraryAtFork(0);
  tlsFlusherAtFork(0);
}
void atForkParent() {
  tlsFlusherAtFork(1);
  tlsLibraryAtFork(1);
  gMakeMu.unlock();
  gMu.unlock();
}
void atForkChild() {
  tlsFlusherAtFork(2);
  tlsLibraryAtFork(2);
  gMakeMu.unlock();
  gMu.unlock();
}
// Registered when the library loads, before any thread of Weft's can hold these locks.
const int gAtFork = pthread_atfork(atForkPrepare, atForkParent, atForkChild);

}  // namespace

#if WEFT_HAVE_OPENSSL

TlsContext::~TlsContext() {
  if (client) lib->SSL_CTX_free(client);
  if (server) lib->SSL_CTX_free(server);
  volatile unsigned char* k = key;
  for (size_t i = 0; i < sizeof(key); ++i) k[i] = 0;
}

namespace {

// Both ends name the one key by this identity; a peer offering another is not a Weft rank.
const unsigned char kIdentity[] = "weft-tls-psk-1";
const size_t kIdentityLen = sizeof(kIdentity) - 1;
const unsigned char kAes128GcmSha256[] = {0x13, 0x01};

// Every SSL_CTX of Weft's carries its TlsContext at index 0 (what SSL_CTX_set_app_data sets).
const TlsContext* contextOf(SSL* ssl) {
  const TlsLibrary* lib = gTlsBioLibrary;
  return static_cast<const TlsContext*>(lib->SSL_CTX_get_ex_data(lib->SSL_get_SSL_CTX(ssl), 0));
}

SSL_SESSION* pskSession(SSL* ssl) {
  const TlsContext* c = contextOf(ssl);
  if (!c) return nullptr;
  const TlsLibrary* lib = c->lib;
  const SSL_CIPHER* cipher = lib->SSL_CIPHER_find(ssl, kAes128GcmSha256);
  SSL_SESSION* s = lib->SSL_SESSION_new();
  if (!s) return nullptr;
  if (!cipher || lib->SSL_SESSION_set1_master_key(s, c->key, sizeof(c->key)) != 1 ||
      lib->SSL_SESSION_set_cipher(s, cipher) != 1 || lib->SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION) != 1) {
    lib->SSL_SESSION_free(s);
    return nullptr;
  }
  return s;
}

// Client: offer the key under Weft's identity.
int useSession(SSL* ssl, const EVP_MD*, const unsigned char** id, size_t* idLen, SSL_SESSION** sess) {
  *sess = pskSession(ssl);
  *id = kIdentity;
  *idLen = kIdentityLen;
  return *sess ? 1 : 0;
}

// Server: accept only Weft's identity; with no session the handshake fails (there is no certificate).
int findSession(SSL* ssl, const unsigned char* id, size_t idLen, SSL_SESSION** sess) {
  *sess = nullptr;
  if (idLen != kIdentityLen || memcmp(id, kIdentity, idLen) != 0) return 1;
  *sess = pskSession(ssl);
  return *sess ? 1 : 0;
}

BIO_METHOD* gBioMethod = nullptr;

ncclResult_t makeContext(const std::string& psk, std::shared_ptr<TlsContext>* out, std::string* why) {
  std::lock_guard<std::mutex> lock(gMakeMu);
  const TlsLibrary* lib = loadTlsLibrary(why);
  if (!lib) return ncclSystemError;
  gTlsBioLibrary = lib;
  auto c = std::make_shared<TlsContext>();
  c->lib = lib;
  // The key proper: SHA-256 of a label and the user's text, so any text of enough entropy serves.
  std::string material = std::string("weft tls 1.3 psk v1") + '\0' + psk;
  unsigned int n = 0;
  if (lib->EVP_Digest(material.data(), material.size(), c->key, &n, lib->EVP_sha256(), nullptr) != 1 ||
      n != sizeof(c->key)) {
    *why = "deriving the TLS key failed: " + tlsErrorQueueText(*lib);
    return ncclSystemError;
  }
  std::fill(material.begin(), material.end(), '\0');
  if (!gBioMethod) {
    BIO_METHOD* m = lib->BIO_meth_new(lib->BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "weft socket");
    if (!m || lib->BIO_meth_set_write(m, tlsBioWrite) != 1 || lib->BIO_meth_set_read(m, tlsBioRead) != 1 ||
        lib->BIO_meth_set_ctrl(m, tlsBioCtrl) != 1) {
      *why = "making OpenSSL's socket BIO failed: " + tlsErrorQueueText(*lib);
      return ncclSystemError;
    }
    gBioMethod = m;
  }
  c->bio = gBioMethod;
  for (SSL_CTX** slot : {&c->client, &c->server}) {
    SSL_CTX* x = lib->SSL_CTX_new(lib->TLS_method());
    *slot = x;
    if (!x || lib->SSL_CTX_ctrl(x, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_3_VERSION, nullptr) != 1 ||
        lib->SSL_CTX_ctrl(x, SSL_CTRL_SET_MAX_PROTO_VERSION, TLS1_3_VERSION, nullptr) != 1 ||
        lib->SSL_CTX_set_ciphersuites(x, "TLS_AES_128_GCM_SHA256") != 1 ||
        lib->SSL_CTX_set_ex_data(x, 0, c.get()) != 1) {
      *why = "setting up OpenSSL's TLS 1.3 context failed: " + tlsErrorQueueText(*lib);
      return ncclSystemError;
    }
    // Partial writes: a transfer that fills the socket reports what went out, like send(2).
    lib->SSL_CTX_ctrl(x, SSL_CTRL_MODE, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, nullptr);
    // Read ahead: one recv(2) takes what has arrived, not a record header and then its body. Bytes
    // read ahead wait inside OpenSSL where poll() cannot see them, which is safe because every
    // reader of Weft's sockets tries to receive before it polls, and only polls after EAGAIN.
    lib->SSL_CTX_ctrl(x, SSL_CTRL_SET_READ_AHEAD, 1, nullptr);
  }
  // A certificate handshake must never stand in for the key: the client verifies any certificate
  // against no authority (so refuses it), and the server has none to offer.
  lib->SSL_CTX_set_verify(c->client, SSL_VERIFY_PEER, nullptr);
  lib->SSL_CTX_set_psk_use_session_callback(c->client, useSession);
  lib->SSL_CTX_set_psk_find_session_callback(c->server, findSession);
  // No session tickets: nothing arrives after the handshake that a sender would have to read.
  lib->SSL_CTX_set_num_tickets(c->server, 0);
  *out = std::move(c);
  return ncclSuccess;
}

}  // namespace

#else

namespace {
ncclResult_t makeContext(const std::string&, std::shared_ptr<TlsContext>*, std::string* why) {
  (void)loadTlsLibrary(why);
  return ncclInvalidUsage;
}
}  // namespace

#endif

ncclResult_t tlsSetKey(const char* psk, std::string* why) {
  std::shared_ptr<TlsContext> c;
  if (psk) {
    if (strlen(psk) < kTlsMinKeyBytes) {
      *why = "the pre-shared key has " + std::to_string(strlen(psk)) + " bytes; at least " +
             std::to_string(kTlsMinKeyBytes) + " are needed";
      return ncclInvalidArgument;
    }
    ncclResult_t r = makeContext(psk, &c, why);
    if (r != ncclSuccess) return r;
  }
  std::lock_guard<std::mutex> lock(gMu);
  gApiSet = true;
  gCtx = std::move(c);
  return ncclSuccess;
}

ncclResult_t tlsCurrent(std::shared_ptr<TlsContext>* ctx, std::string* why) {
  std::lock_guard<std::mutex> lock(gMu);
  if (!gApiSet && !gEnvRead) {
    gEnvRead = true;
    const std::string path = param::tlsKeyFile();
    if (!path.empty()) {
      std::ifstream in(path, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      std::string key = text.str();
      if (!in) {
        gEnvResult = ncclSystemError;
        gEnvWhy = "WEFT_TLS_KEY_FILE=" + path + " cannot be read: " + sockets_detail::errnoString(errno);
      } else {
        if (!key.empty() && key.back() == '\n') key.pop_back();
        if (key.size() < kTlsMinKeyBytes || key.find('\0') != std::string::npos) {
          gEnvResult = ncclInvalidArgument;
          gEnvWhy = "WEFT_TLS_KEY_FILE=" + path + " holds " + std::to_string(key.size()) +
                    " bytes; the key needs at least " + std::to_string(kTlsMinKeyBytes) + " (and no NUL byte)";
        } else {
          gEnvResult = makeContext(key, &gCtx, &gEnvWhy);
          if (gEnvResult != ncclSuccess) gEnvWhy = "WEFT_TLS_KEY_FILE is set, but " + gEnvWhy;
        }
        std::fill(key.begin(), key.end(), '\0');
      }
    }
  }
  if (!gApiSet && gEnvResult != ncclSuccess) {
    *why = gEnvWhy;
    return gEnvResult;
  }
  *ctx = gCtx;
  return ncclSuccess;
}

std::string tlsPlaintextHint(const void* firstBytes, size_t n) {
  const auto* b = static_cast<const unsigned char*>(firstBytes);
  // A record header: content type 20..23 (change_cipher_spec, alert, handshake, data), version 3.x.
  if (n < 3 || b[0] < 20 || b[0] > 23 || b[1] != 3 || b[2] > 4) return "";
  return " (the peer sent TLS: it has encryption on, this process has it off; every rank must set the same key "
         "(ncclSetEncryption or WEFT_TLS_KEY_FILE), or none)";
}

bool tlsEnabled() {
  std::shared_ptr<TlsContext> c;
  std::string why;
  return tlsCurrent(&c, &why) == ncclSuccess && c != nullptr;
}

}  // namespace weft
