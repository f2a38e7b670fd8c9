// A fast 64-bit hash of bytes, for names and keys that every rank computes alike (not for secrets).
#pragma once
#include <cstddef>
#include <cstdint>

namespace weft {

// FNV-1a, then a splitmix64 finalizer so that nearby inputs land far apart.
inline uint64_t hashBytes(const void* data, size_t len, uint64_t seed) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

}  // namespace weft
