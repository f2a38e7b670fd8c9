// The one typed registry of every knob Weft reads from the environment. No other code calls getenv.
// Each parameter has a primary name (NCCL_*, RCCL_* or WEFT_*), optional alias names, a type,
// a default, a scope and a one-line doc (param_table.h). Values are read once (on first use of any
// parameter) and cached. Per-rank parameters have accessors; Agreed ones are read through the
// communicator's agreed copy (ncclComm::agreed), never per process.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/param_table.h"

namespace weft::param {

// The C++ type of each table Type.
#define WEFT_PARAM_TYPE_Int int64_t
#define WEFT_PARAM_TYPE_Size int64_t
#define WEFT_PARAM_TYPE_Bool bool
#define WEFT_PARAM_TYPE_String std::string

// Per-rank parameters: one accessor each, e.g. int64_t timeoutMs() for WEFT_TIMEOUT_MS.
#define WEFT_PARAM_DECLARE_Rank(acc, type) WEFT_PARAM_TYPE_##type acc();
#define WEFT_PARAM_DECLARE_Agreed(acc, type)
#define WEFT_PARAM_DECLARE(acc, type, name, aliases, def, allowed, group, scope, doc) \
  WEFT_PARAM_DECLARE_##scope(acc, type)
WEFT_PARAM_TABLE(WEFT_PARAM_DECLARE)
#undef WEFT_PARAM_DECLARE
#undef WEFT_PARAM_DECLARE_Rank
#undef WEFT_PARAM_DECLARE_Agreed

// Every Agreed parameter, as one value. A communicator holds the one its ranks agreed on at init
// (ncclComm::agreed: rank 0's values); localAgreed() is what this process's own environment says,
// which is only this rank's proposal.
struct Agreed {
#define WEFT_PARAM_FIELD_Agreed(acc, type) WEFT_PARAM_TYPE_##type acc{};
#define WEFT_PARAM_FIELD_Rank(acc, type)
#define WEFT_PARAM_FIELD(acc, type, name, aliases, def, allowed, group, scope, doc) WEFT_PARAM_FIELD_##scope(acc, type)
  WEFT_PARAM_TABLE(WEFT_PARAM_FIELD)
#undef WEFT_PARAM_FIELD
#undef WEFT_PARAM_FIELD_Rank
#undef WEFT_PARAM_FIELD_Agreed
};
Agreed localAgreed();

// The wire form exchanged at init: every Agreed parameter as its variable name and canonical
// text. decodeAgreed fails (with *why) on a blob that lacks a parameter or holds a value this
// build rejects, e.g. from a rank running another Weft version.
std::string encodeAgreed(const Agreed& a);
bool decodeAgreed(const std::string& blob, Agreed* out, std::string* why);

// Where `mine` differs from `inForce`: the variable and both canonical texts.
struct AgreedDifference {
  std::string name, mine, inForce;
};
std::vector<AgreedDifference> agreedDifferences(const Agreed& mine, const Agreed& inForce);

// The NCCL API version Weft implements (banners, weft-info).
inline constexpr const char* kNcclApiVersion = "2.30.7";

// Reflection, for tools/weft-info and docs/env.md.
struct ParamView {
  std::string name;     // primary environment variable
  std::string aliases;  // other accepted names, comma separated ("" if none)
  std::string type;     // "int", "bool", "size", "string"
  std::string defaultValue;
  std::string value;   // the value in effect now
  int64_t number = 0;  // that value as a number (int, size and bool parameters; bool: 0 or 1)
  bool set;            // true when the environment set it (under any of its names)
  std::string doc;     // one line
  // Added for weft-info and tests:
  std::string allowed;  // "1..64", "auto|host", ... ("" = whatever the type accepts)
  std::string group;    // the docs/env.md section: "Logging", "Transports and buffers", ...
  bool agreed = false;  // Scope Agreed: a communicator uses rank 0's value on every rank
  std::string source;   // the variable the value came from ("" = the default)
  std::string envText;  // that variable's text as the environment gave it
  std::string problem;  // why envText was rejected ("" = accepted or not set)
};
std::vector<ParamView> list();

// The warnings of the latest read of the environment (malformed or out-of-range values, a primary
// name and its alias set to different values), one line each, in table order.
std::vector<std::string> loadWarnings();
// Prints loadWarnings() with WEFT_WARN, and then what the environment plugin logged while the
// environment was read, once per read of the environment. The logger calls it once
// it is ready (so the warnings obey NCCL_DEBUG); any accessor other than the three NCCL_DEBUG* ones
// brings the logger up first, so the warnings appear even in a process that logs nothing else.
void reportLoadWarnings();

// docs/env.md, exactly: the table rendered as Markdown (`weft-info --markdown` prints it; a unit
// test fails when the committed file differs).
std::string renderMarkdown();

// Re-reads the environment (tests change it between cases) and makes the logger re-read its
// settings too. Not thread-safe against readers.
void reloadForTesting();

}  // namespace weft::param
