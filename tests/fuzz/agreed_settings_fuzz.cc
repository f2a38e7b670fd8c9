// The settings rank 0 proposes at init (src/comm/agreement.cc): every rank decodes rank 0's blob of
// NUL-separated NAME / value pairs with param::decodeAgreed, which checks each value as the
// environment's would be checked (integers, sizes, booleans, choices). What it accepts must
// encode and decode again to the same settings.
#include <cstdint>
#include <string>

#include "base/params.h"
#include "fuzz_input.h"

using namespace weft;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string blob(reinterpret_cast<const char*>(data), size);
  param::Agreed decoded;
  std::string why;
  if (!param::decodeAgreed(blob, &decoded, &why)) {
    if (why.empty()) fuzz::fail("a refusal without a reason");
    return 0;
  }
  param::Agreed again;
  if (!param::decodeAgreed(param::encodeAgreed(decoded), &again, &why)) fuzz::fail("re-encoded settings do not decode");
  if (!param::agreedDifferences(decoded, again).empty()) fuzz::fail("re-encoded settings decode to others");
  return 0;
}
