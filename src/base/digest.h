// SHA-256 and HMAC-SHA-256 (FIPS 180-4, RFC 2104), for the bootstrap's proofs of a shared secret.
// Weft's own code, so that authentication never depends on whether OpenSSL is installed. Not a
// hot path: a few dozen digests per communicator.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace weft {

using Digest256 = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t len);
  Digest256 finish();  // the object must not be updated afterwards

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t totalBytes_ = 0;
};

Digest256 sha256(const void* data, size_t len);

// HMAC over the concatenation of `parts` (pointer, length pairs), so that callers can authenticate a
// header and a body without copying them together.
struct ByteSpan {
  const void* data;
  size_t len;
};
Digest256 hmacSha256(const void* key, size_t keyLen, const ByteSpan* parts, size_t nparts);

// Equality that takes the same time wherever the first difference is.
bool digestEqual(const Digest256& a, const Digest256& b);

}  // namespace weft
