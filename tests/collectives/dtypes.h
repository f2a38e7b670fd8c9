// The twelve NCCL datatypes as the reference side of the suite sees them: raw bit patterns in a
// uint64_t, converted to double (floating types) or to a wrapped 64-bit integer (integer types).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "api.h"
#include "lowp.h"

namespace weft_test {

struct DtypeInfo {
  ncclDataType_t type;
  const char* name;
  size_t size;  // bytes
  bool isFloat;
  bool isSigned;          // integers only
  const MiniFloat* mini;  // float16, bfloat16 and the float8s; nullptr otherwise
  double epsilon;         // machine epsilon (floats), 0 for integers
};

const DtypeInfo& dtypeInfo(ncclDataType_t type);
const std::vector<ncclDataType_t>& allDtypes();

uint64_t loadBits(const void* base, size_t index, size_t size);
void storeBits(void* base, size_t index, size_t size, uint64_t bits);

// Floating types: the exact value of the pattern.
double bitsToDouble(ncclDataType_t type, uint64_t bits);
// Floating types: the nearest value (ties to even).
uint64_t doubleToBits(ncclDataType_t type, double value);
// Integer types: the value sign-extended (signed types) or zero-extended to 64 bits.
int64_t bitsToInt(ncclDataType_t type, uint64_t bits);
// Integer types: the low size*8 bits of v (two's complement wraparound).
uint64_t intToBits(ncclDataType_t type, uint64_t v);
// True when a floating pattern is NaN or Inf.
bool bitsNonFinite(ncclDataType_t type, uint64_t bits);

// "3.5 (0x4300)" or "-7 (0xf9)".
std::string formatBits(ncclDataType_t type, uint64_t bits);

}  // namespace weft_test
