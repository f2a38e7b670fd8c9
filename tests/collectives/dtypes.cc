#include "dtypes.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace weft_test {
namespace {

const DtypeInfo kInfos[] = {
    {ncclInt8, "int8", 1, false, true, nullptr, 0},
    {ncclUint8, "uint8", 1, false, false, nullptr, 0},
    {ncclInt32, "int32", 4, false, true, nullptr, 0},
    {ncclUint32, "uint32", 4, false, false, nullptr, 0},
    {ncclInt64, "int64", 8, false, true, nullptr, 0},
    {ncclUint64, "uint64", 8, false, false, nullptr, 0},
    {ncclFloat16, "float16", 2, true, true, &kFloat16, 0x1p-10},
    {ncclFloat32, "float32", 4, true, true, nullptr, 0x1p-23},
    {ncclFloat64, "float64", 8, true, true, nullptr, 0x1p-52},
    {ncclBfloat16, "bfloat16", 2, true, true, &kBfloat16, 0x1p-7},
    {ncclFloat8e4m3, "f8e4m3", 1, true, true, &kFloat8E4M3, 0x1p-3},
    {ncclFloat8e5m2, "f8e5m2", 1, true, true, &kFloat8E5M2, 0x1p-2},
};

}  // namespace

const DtypeInfo& dtypeInfo(ncclDataType_t type) {
  const int i = static_cast<int>(type);
  if (i >= 0 && i < static_cast<int>(sizeof(kInfos) / sizeof(kInfos[0])) && kInfos[i].type == type) return kInfos[i];
  for (const DtypeInfo& d : kInfos)
    if (d.type == type) return d;
  throw std::invalid_argument("dtypeInfo: not a datatype: " + std::to_string(static_cast<int>(type)));
}

const std::vector<ncclDataType_t>& allDtypes() {
  static const std::vector<ncclDataType_t> all = [] {
    std::vector<ncclDataType_t> v;
    for (const DtypeInfo& d : kInfos) v.push_back(d.type);
    return v;
  }();
  return all;
}

uint64_t loadBits(const void* base, size_t index, size_t size) {
  uint64_t v = 0;
  memcpy(&v, static_cast<const char*>(base) + index * size, size);  // little endian
  return v;
}

void storeBits(void* base, size_t index, size_t size, uint64_t bits) {
  memcpy(static_cast<char*>(base) + index * size, &bits, size);
}

double bitsToDouble(ncclDataType_t type, uint64_t bits) {
  const DtypeInfo& d = dtypeInfo(type);
  if (d.mini) return decodeMiniFloat(*d.mini, static_cast<uint32_t>(bits));
  if (type == ncclFloat32) {
    float f;
    const uint32_t b = static_cast<uint32_t>(bits);
    memcpy(&f, &b, sizeof(f));
    return f;
  }
  if (type == ncclFloat64) {
    double f;
    memcpy(&f, &bits, sizeof(f));
    return f;
  }
  return static_cast<double>(bitsToInt(type, bits));
}

uint64_t doubleToBits(ncclDataType_t type, double value) {
  const DtypeInfo& d = dtypeInfo(type);
  if (d.mini) return encodeMiniFloat(*d.mini, value);
  if (type == ncclFloat32) {
    const float f = static_cast<float>(value);
    uint32_t b;
    memcpy(&b, &f, sizeof(b));
    return b;
  }
  if (type == ncclFloat64) {
    uint64_t b;
    memcpy(&b, &value, sizeof(b));
    return b;
  }
  return intToBits(type, static_cast<uint64_t>(static_cast<int64_t>(value)));
}

int64_t bitsToInt(ncclDataType_t type, uint64_t bits) {
  const DtypeInfo& d = dtypeInfo(type);
  const int width = static_cast<int>(d.size * 8);
  if (width == 64) return static_cast<int64_t>(bits);
  bits &= (1ull << width) - 1;
  if (d.isSigned && (bits >> (width - 1)) & 1) bits |= ~((1ull << width) - 1);
  return static_cast<int64_t>(bits);
}

uint64_t intToBits(ncclDataType_t type, uint64_t v) {
  const int width = static_cast<int>(dtypeInfo(type).size * 8);
  return width == 64 ? v : (v & ((1ull << width) - 1));
}

bool bitsNonFinite(ncclDataType_t type, uint64_t bits) {
  const DtypeInfo& d = dtypeInfo(type);
  if (!d.isFloat) return false;
  return !std::isfinite(bitsToDouble(type, bits));
}

std::string formatBits(ncclDataType_t type, uint64_t bits) {
  const DtypeInfo& d = dtypeInfo(type);
  char buf[96];
  if (d.isFloat) {
    snprintf(buf, sizeof(buf), "%.9g (0x%0*llx)", bitsToDouble(type, bits), static_cast<int>(d.size * 2),
             static_cast<unsigned long long>(bits));
  } else if (d.isSigned) {
    snprintf(buf, sizeof(buf), "%lld (0x%0*llx)", static_cast<long long>(bitsToInt(type, bits)),
             static_cast<int>(d.size * 2), static_cast<unsigned long long>(bits));
  } else {
    snprintf(buf, sizeof(buf), "%llu (0x%0*llx)", static_cast<unsigned long long>(bits), static_cast<int>(d.size * 2),
             static_cast<unsigned long long>(bits));
  }
  return buf;
}

}  // namespace weft_test
