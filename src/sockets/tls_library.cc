// Loading OpenSSL 3 with dlopen: see tls_library.h.
#include "sockets/tls_library.h"

#include <dlfcn.h>

#include <memory>

#include <mutex>

#include "base/params.h"
#include "sockets/tls_context.h"

namespace weft {

namespace {

std::mutex gLibraryMu;
const TlsLibrary* gLoaded = nullptr;  // never freed: sessions may use it until the process ends

}  // namespace

void tlsLibraryAtFork(int phase) {
  if (phase == 0)
    gLibraryMu.lock();
  else
    gLibraryMu.unlock();
}

#if WEFT_HAVE_OPENSSL

const TlsLibrary* loadTlsLibrary(std::string* why) {
  std::lock_guard<std::mutex> lock(gLibraryMu);
  if (gLoaded) return gLoaded;
  std::string name = param::tlsLibssl();
  if (name.empty()) name = "libssl.so.3";
  // RTLD_LOCAL: OpenSSL's symbols must not satisfy lookups of other libraries in the process.
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    *why = "cannot load OpenSSL 3 (WEFT_TLS_LIBSSL=" + name + "): " + (e ? e : "dlopen failed") +
           "; install libssl3 or point WEFT_TLS_LIBSSL at it";
    return nullptr;
  }
  auto lib = std::make_unique<TlsLibrary>();
  lib->path = name;
  std::string missing;
#define WEFT_TLS_RESOLVE(ret, fn, args)                       \
  lib->fn = reinterpret_cast<decltype(&::fn)>(dlsym(h, #fn)); \
  if (!lib->fn) missing += std::string(missing.empty() ? "" : ", ") + #fn;
  WEFT_TLS_FUNCTIONS(WEFT_TLS_RESOLVE)
#undef WEFT_TLS_RESOLVE
  if (!missing.empty()) {
    dlclose(h);
    *why = name + " is not OpenSSL 3: it lacks " + missing;
    return nullptr;
  }
  if (lib->OPENSSL_init_ssl(0, nullptr) != 1) {
    *why = "OPENSSL_init_ssl failed in " + name;
    return nullptr;
  }
  gLoaded = lib.release();
  return gLoaded;
}

std::string tlsErrorQueueText(const TlsLibrary& lib) {
  std::string text;
  while (unsigned long e = lib.ERR_get_error()) {
    char buf[256];
    lib.ERR_error_string_n(e, buf, sizeof(buf));
    text += (text.empty() ? "" : "; ") + std::string(buf);
  }
  return text;
}

#else

const TlsLibrary* loadTlsLibrary(std::string* why) {
  *why =
      "this build of Weft has no TLS support (it was built without OpenSSL 3 headers: install libssl-dev and "
      "rebuild)";
  return nullptr;
}

std::string tlsErrorQueueText(const TlsLibrary&) { return ""; }

#endif

}  // namespace weft
