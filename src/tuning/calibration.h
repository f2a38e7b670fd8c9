// Host-mode calibration: the cost model's machine constants measured on this host (well under
// 100 ms, once per process, at the first communicator init) and cached in
// $WEFT_CACHE_DIR/weft/ (alias $XDG_CACHE_HOME, else ~/.cache/weft/), one file per host name and CPU model.
// WEFT_TUNER_CALIBRATE picks auto (cache, else measure), redo (measure and rewrite) or off
// (built-in defaults). These are this host's contribution: a communicator uses the constants its
// ranks agree on (agreed_constants.h), and the agreed WEFT_TUNER_CONSTANTS applies there.
#pragma once
#include <string>

#include "tuning/cost_model.h"

namespace weft {

// The constants in effect for this process (calibrated on first call; thread-safe).
const HostConstants& hostConstants();
// Where they came from: "measured", "cache <path>" or "defaults".
std::string hostConstantsSource();

// The measurement itself (bounded: every wait has a deadline; a measurement that cannot finish
// keeps the default for its field).
HostConstants measureHostConstants();

// The cache file for this host and CPU model ("" when no cache directory is known).
std::string calibrationCachePath();
bool saveHostConstants(const std::string& path, const HostConstants& hc, std::string* why);
// False when the file is missing, from another format version, or malformed.
bool loadHostConstants(const std::string& path, HostConstants* hc);

// Applies "name=value,..." (names as in kConstantFields, case-insensitive). Each bad token is
// appended to *bad and skipped.
void applyConstantOverrides(const std::string& text, HostConstants* hc, std::string* bad);

// "copyGBps=8.1 reduceGBps=5 ..." on one line.
std::string formatHostConstants(const HostConstants& hc);

// Forgets the process's constants so the next hostConstants() runs again (tests).
void calibrationResetForTesting();

}  // namespace weft
