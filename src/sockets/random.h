// Secrets for the bootstrap's handshake (unique ids, connection cookies).
#pragma once
#include <cstddef>

namespace weft {

// Fills buf with cryptographically random bytes (getrandom, falling back to /dev/urandom).
bool randomBytes(void* buf, size_t len);

}  // namespace weft
