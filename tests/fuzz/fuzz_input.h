// Taking a libFuzzer input apart: fixed-size structs, single bytes and strings, in order. Past the
// end every read yields zeros or an empty string, so a target never reads outside the input.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace weft::fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t left() const { return size_ - pos_; }
  uint8_t byte() {
    if (pos_ >= size_) return 0;
    return data_[pos_++];
  }
  // Fills *out with the next sizeof(T) bytes (zero-padded at the end); false when none were left.
  template <typename T>
  bool take(T* out) {
    memset(out, 0, sizeof(T));
    if (pos_ >= size_) return false;
    size_t n = left() < sizeof(T) ? left() : sizeof(T);
    memcpy(out, data_ + pos_, n);
    pos_ += n;
    return true;
  }
  // Fills buf[0..len) with the next bytes (zero-padded at the end).
  void takeBytes(void* buf, size_t len) {
    if (len == 0) return;  // buf may be null then (an empty vector's data())
    memset(buf, 0, len);
    size_t n = left() < len ? left() : len;
    if (n > 0) memcpy(buf, data_ + pos_, n);
    pos_ += n;
  }
  // Up to the next `sep` byte (consumed, not returned) or the end.
  std::string until(char sep) {
    std::string out;
    while (pos_ < size_ && data_[pos_] != static_cast<uint8_t>(sep)) out.push_back(static_cast<char>(data_[pos_++]));
    if (pos_ < size_) pos_++;
    return out;
  }
  std::string rest() {
    std::string out(reinterpret_cast<const char*>(data_ + pos_), left());
    pos_ = size_;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// A broken invariant: print what and stop, so that libFuzzer keeps the input as a crash.
[[noreturn]] inline void fail(const char* what) {
  fprintf(stderr, "fuzz invariant broken: %s\n", what);
  abort();
}

}  // namespace weft::fuzz
