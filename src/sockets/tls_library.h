// OpenSSL 3, loaded at run time. libnccl.so.2 never links libssl: a process that does not ask for
// encryption needs no OpenSSL on its machine, and one that does gets a clear error where it is
// missing. The functions Weft calls are resolved once, through libssl's handle (dlsym also searches
// the libcrypto it depends on).
#pragma once
#include <cstddef>
#include <string>

#include "sockets/tls_openssl.h"

namespace weft {

struct TlsLibrary {
// Each pointer has the exact type of OpenSSL's declaration (the list's types document it).
// NOLINTNEXTLINE(bugprone-macro-parentheses): `name` is the member being declared, not an expression
#define WEFT_TLS_POINTER(ret, name, args) decltype(&::name) name = nullptr;
  WEFT_TLS_FUNCTIONS(WEFT_TLS_POINTER)
#undef WEFT_TLS_POINTER
  std::string path;  // what was opened, for messages
};

// The loaded library, or null with *why saying what is missing (this build has no OpenSSL
// headers, or dlopen/dlsym failed). The library name is WEFT_TLS_LIBSSL (default libssl.so.3).
// A failure is not remembered: a later call tries again.
const TlsLibrary* loadTlsLibrary(std::string* why);

// OpenSSL's error queue as text (empty when it holds nothing), and cleared.
std::string tlsErrorQueueText(const TlsLibrary& lib);

}  // namespace weft
