// The calibration cache file ($WEFT_CACHE_DIR/weft/calibration-v4-*.txt): any process of the user
// (or a disk error) may have written it, so the reader must refuse what is malformed or
// implausible, and what it accepts must be usable: plausible constants, and a description that
// can be printed.
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "tuning/calibration.h"

using namespace weft;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Calibration cal;
  std::string why;
  if (!parseCalibration(text, "calibration.txt", &cal, &why)) {
    if (why.empty()) fuzz::fail("a refusal without a reason");
    return 0;
  }
  if (!implausibleConstant(cal.constants).empty()) fuzz::fail("implausible constants were accepted");
  if (!(cal.measuredAt > 0)) fuzz::fail("a file without measured_at was accepted");
  (void)describeCalibration(cal);
  (void)formatHostConstants(cal.constants);
  (void)calibrationLoadedWhy(cal.load);
  return 0;
}
