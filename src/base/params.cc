// The parameter registry: reads every variable of src/base/param_table.h from the environment once,
// checks it against its type and allowed values, and serves the cached result to the rest of Weft.
// This is the only file in Weft that calls getenv (an environment plugin, env_plugin.h, may answer
// in its place).
#include "base/params.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>

#include "base/env_plugin.h"
#include "base/log.h"
#include "base/param_table.h"

namespace weft::param {
namespace {

enum class Type { Int, Size, Bool, String };
enum class Group { Logging, Transport, Bootstrap, Network, Comm, Topology, Dda, Tuning };
enum class Scope { Rank, Agreed };

const char* typeName(Type t) {
  switch (t) {
    case Type::Int: return "int";
    case Type::Size: return "size";
    case Type::Bool: return "bool";
    case Type::String: return "string";
  }
  return "?";
}

const char* groupTitle(Group g) {
  switch (g) {
    case Group::Logging: return "Logging";
    case Group::Transport: return "Transports and buffers";
    case Group::Bootstrap: return "Bootstrap";
    case Group::Network: return "Network";
    case Group::Comm: return "Communicator behaviour";
    case Group::Topology: return "Topology";
    case Group::Dda: return "Direct data access and low precision";
    case Group::Tuning: return "Tuning";
  }
  return "?";
}

struct Spec {
  const char* name;
  const char* aliases;
  Type type;
  const char* def;
  const char* allowed;
  Group group;
  Scope scope;
  const char* doc;
};

#define WEFT_PARAM_ID(acc, type, name, aliases, def, allowed, group, scope, doc) acc,
enum class Id : int { WEFT_PARAM_TABLE(WEFT_PARAM_ID) kCount };
constexpr int kCount = static_cast<int>(Id::kCount);
#undef WEFT_PARAM_ID

#define WEFT_PARAM_SPEC(acc, type, name, aliases, def, allowed, group, scope, doc) \
  Spec{name, aliases, Type::type, def, allowed, Group::group, Scope::scope, doc},
constexpr std::array<Spec, kCount> kSpecs = {WEFT_PARAM_TABLE(WEFT_PARAM_SPEC)};
#undef WEFT_PARAM_SPEC

// ---- parsing ----

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// Decimal or 0x hex, optional sign; with allowSuffix a trailing K, M or G (either case) multiplies
// by 2^10, 2^20 or 2^30. Leading zeros stay decimal: users write "010" meaning ten, not eight.
bool parseInteger(std::string_view text, bool allowSuffix, int64_t* out) {
  std::string_view s = trim(text);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  // Magnitudes up to 2^63 so that INT64_MIN itself parses.
  constexpr uint64_t kLimit = uint64_t{1} << 63;
  uint64_t magnitude = 0;
  size_t digits = 0;
  while (!s.empty()) {
    char c = s.front();
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (base == 16 && c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (base == 16 && c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      break;
    }
    if (magnitude > (kLimit - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) return false;
    magnitude = magnitude * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    ++digits;
    s.remove_prefix(1);
  }
  if (digits == 0) return false;
  if (allowSuffix && s.size() == 1) {
    int shift = 0;
    switch (s.front()) {
      case 'k':
      case 'K': shift = 10; break;
      case 'm':
      case 'M': shift = 20; break;
      case 'g':
      case 'G': shift = 30; break;
      default: return false;
    }
    if (magnitude > (kLimit >> shift)) return false;
    magnitude <<= shift;
    s.remove_prefix(1);
  }
  if (!s.empty()) return false;
  if (negative) {
    *out = magnitude == kLimit ? INT64_MIN : -static_cast<int64_t>(magnitude);
  } else {
    if (magnitude == kLimit) return false;
    *out = static_cast<int64_t>(magnitude);
  }
  return true;
}

// Integers (non-zero is true, as NCCL's users write them) and the usual words.
bool parseBool(std::string_view text, bool* out) {
  int64_t n;
  if (parseInteger(text, false, &n)) {
    *out = n != 0;
    return true;
  }
  std::string_view s = trim(text);
  for (const char* w : {"true", "yes", "on"}) {
    if (equalsIgnoreCase(s, w)) {
      *out = true;
      return true;
    }
  }
  for (const char* w : {"false", "no", "off"}) {
    if (equalsIgnoreCase(s, w)) {
      *out = false;
      return true;
    }
  }
  return false;
}

// An ALLOWED column of the table, taken apart.
struct Allowed {
  bool hasMin = false, hasMax = false;
  int64_t min = 0, max = 0;
  std::vector<std::string> choices;  // for strings
};

Allowed parseAllowed(const Spec& spec) {
  Allowed a;
  std::string_view s = spec.allowed;
  if (s.empty()) return a;
  if (spec.type == Type::String) {
    size_t start = 0;
    while (start <= s.size()) {
      size_t bar = s.find('|', start);
      if (bar == std::string_view::npos) bar = s.size();
      a.choices.emplace_back(s.substr(start, bar - start));
      start = bar + 1;
    }
    return a;
  }
  size_t dots = s.find("..");
  if (dots == std::string_view::npos) return a;  // the table test rejects this
  std::string_view lo = s.substr(0, dots), hi = s.substr(dots + 2);
  if (!lo.empty()) a.hasMin = parseInteger(lo, false, &a.min);
  if (!hi.empty()) a.hasMax = parseInteger(hi, false, &a.max);
  return a;
}

// One parameter's cached result.
struct Value {
  std::string text;     // canonical text: decimal for numbers, "0"/"1" for bools
  int64_t number = 0;   // Int, Size, Bool
  bool set = false;     // some name of it was set (non-empty) in the environment
  std::string source;   // that name
  std::string envText;  // what it said
  std::string problem;  // why it was rejected ("" = accepted)
};

struct State {
  std::array<Value, kCount> values;
  std::vector<std::string> warnings;
};

// Interprets text for spec; false with *why when it does not fit.
bool interpret(const Spec& spec, const Allowed& allowed, std::string_view text, Value* v, std::string* why) {
  switch (spec.type) {
    case Type::Int:
    case Type::Size: {
      int64_t n;
      if (!parseInteger(text, spec.type == Type::Size, &n)) {
        *why = spec.type == Type::Size ? "is not a size (decimal or 0x hex, optional K, M or G suffix)"
                                       : "is not an integer (decimal or 0x hex)";
        return false;
      }
      if ((allowed.hasMin && n < allowed.min) || (allowed.hasMax && n > allowed.max)) {
        *why = std::string("is outside ") + spec.allowed;
        return false;
      }
      v->number = n;
      v->text = std::to_string(n);
      return true;
    }
    case Type::Bool: {
      bool b;
      if (!parseBool(text, &b)) {
        *why = "is not a boolean (0 or 1, true or false, yes or no, on or off)";
        return false;
      }
      v->number = b ? 1 : 0;
      // One char rather than a literal: GCC 12 at -O3 warns falsely (-Wrestrict) on assigning a
      // one-byte literal here, which would break WEFT_WERROR builds.
      v->text.assign(1, b ? '1' : '0');
      return true;
    }
    case Type::String: {
      // "" stands for unset, which every string parameter allows (it is the usual default).
      if (allowed.choices.empty() || text.empty()) {
        v->text = std::string(text);
        return true;
      }
      std::string_view t = trim(text);
      for (const std::string& c : allowed.choices) {
        if (equalsIgnoreCase(t, c)) {
          v->text = c;
          return true;
        }
      }
      *why = "is not one of ";
      for (size_t i = 0; i < allowed.choices.size(); ++i) *why += (i ? ", " : "") + allowed.choices[i];
      return false;
    }
  }
  return false;
}

std::string displayDefault(const Spec& spec) {
  if (spec.type == Type::String) return std::string("\"") + spec.def + "\"";
  return spec.def;
}

// A variable's value, or nullptr when it is unset or empty (NCCL treats "" as unset too, and
// `export NCCL_X=` is how shell users clear a variable).
// Through the environment plugin when one is loaded (env_plugin.h), except NCCL_ENV_PLUGIN itself.
const char* readEnv(std::string_view name) {
  const std::string key(name);
  const EnvPlugin& plugin = environmentPlugin(std::getenv("NCCL_ENV_PLUGIN"));
  const char* v = plugin.inUse() && key != "NCCL_ENV_PLUGIN" ? plugin.getEnv(key.c_str()) : std::getenv(key.c_str());
  return (v != nullptr && v[0] != '\0') ? v : nullptr;
}

// A second spelling of a knob (NCCL_MIN_CTAS for NCCL_MIN_NCHANNELS) set to another value than the
// primary is worth a warning. A general variable of the system (XDG_CACHE_HOME) is only a fallback:
// a desktop session sets it for every program, so a job that also sets WEFT_CACHE_DIR is normal.
bool isLibraryName(std::string_view name) {
  return name.rfind("NCCL_", 0) == 0 || name.rfind("RCCL_", 0) == 0 || name.rfind("WEFT_", 0) == 0;
}

std::vector<std::string> splitAliases(const char* aliases) {
  std::vector<std::string> out;
  std::string_view s = aliases;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view one = trim(s.substr(0, comma));
    if (!one.empty()) out.emplace_back(one);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

std::unique_ptr<State> readEnvironment() {
  auto state = std::make_unique<State>();
  const EnvPlugin& plugin = environmentPlugin(std::getenv("NCCL_ENV_PLUGIN"));
  if (!plugin.problem.empty()) state->warnings.push_back(plugin.problem);
  for (int i = 0; i < kCount; ++i) {
    const Spec& spec = kSpecs[i];
    const Allowed allowed = parseAllowed(spec);
    Value& v = state->values[i];
    std::string why;
    if (!interpret(spec, allowed, spec.def, &v, &why)) {
      // Only a broken table row gets here; params_test checks every row, so this is belt and braces.
      state->warnings.push_back(std::string("Weft's own default for ") + spec.name + " " + why);
    }
    // The primary name first; then the aliases in order.
    std::vector<std::string> names{spec.name};
    for (std::string& a : splitAliases(spec.aliases)) names.push_back(std::move(a));
    for (const std::string& name : names) {
      const char* text = readEnv(name);
      if (text == nullptr) continue;
      if (!v.set) {
        v.set = true;
        v.source = name;
        v.envText = text;
      } else if (v.envText != text && isLibraryName(name)) {
        state->warnings.push_back(name + "=\"" + text + "\" is ignored: " + v.source + "=\"" + v.envText +
                                  "\" is also set and takes precedence");
      }
    }
    if (!v.set) continue;
    Value parsed;
    if (interpret(spec, allowed, v.envText, &parsed, &why)) {
      v.text = parsed.text;
      v.number = parsed.number;
    } else {
      v.problem = why;
      std::string label = v.source == spec.name ? v.source : v.source + " (alias of " + spec.name + ")";
      state->warnings.push_back(label + "=\"" + v.envText + "\" " + why + "; using the default " +
                                displayDefault(spec));
    }
  }
  return state;
}

// The current state: built on first use under a mutex, then read through an atomic pointer so
// that every later access is one load. Replaced states are kept (not freed) because a reader on
// another thread may still be looking at one; only tests replace it.
std::atomic<const State*> g_state{nullptr};
std::mutex g_loadMutex;
// Owns every state built; guarded by g_loadMutex. Never destroyed: a thread of Weft's that outlives
// main (the bootstrap root that ncclGetUniqueId starts is detached) may read a parameter while the
// process's static destructors run.
auto* const g_states = new std::vector<std::unique_ptr<State>>();
std::atomic<bool> g_reported{false};

const State& state() {
  const State* s = g_state.load(std::memory_order_acquire);
  if (s != nullptr) return *s;
  std::lock_guard<std::mutex> lock(g_loadMutex);
  s = g_state.load(std::memory_order_relaxed);
  if (s == nullptr) {
    g_states->push_back(readEnvironment());
    s = g_states->back().get();
    g_state.store(s, std::memory_order_release);
  }
  return *s;
}

// Any parameter but the logger's own: make sure the load's warnings have been reported. Bringing
// the logger up does it (log.cc calls reportLoadWarnings once ready). The logger's parameters skip
// this because the logger reads them while it is coming up.
const Value& value(Id id) {
  const State& s = state();
  if (!g_reported.load(std::memory_order_acquire) && id != Id::debugLevel && id != Id::debugSubsys &&
      id != Id::debugFile) {
    (void)weft::logEnabled(LogLevel::kWarn, kLogAll);
  }
  return s.values[static_cast<int>(id)];
}

int64_t getInt(Id id) { return value(id).number; }
int64_t getSize(Id id) { return value(id).number; }
// Unused while no Bool parameter has rank scope: every Bool today is agreed (a field, no accessor).
[[maybe_unused]] bool getBool(Id id) { return value(id).number != 0; }
std::string getString(Id id) { return value(id).text; }

}  // namespace

// The typed accessors of params.h, one per Rank row.
#define WEFT_PARAM_ACCESSOR_Rank(acc, type) \
  WEFT_PARAM_TYPE_##type acc() { return get##type(Id::acc); }
#define WEFT_PARAM_ACCESSOR_Agreed(acc, type)
#define WEFT_PARAM_ACCESSOR(acc, type, name, aliases, def, allowed, group, scope, doc) \
  WEFT_PARAM_ACCESSOR_##scope(acc, type)
WEFT_PARAM_TABLE(WEFT_PARAM_ACCESSOR)
#undef WEFT_PARAM_ACCESSOR
#undef WEFT_PARAM_ACCESSOR_Rank
#undef WEFT_PARAM_ACCESSOR_Agreed

namespace {

// One Agreed field from / to a parsed Value; its canonical text.
void assignField(int64_t* f, const Value& v) { *f = v.number; }
void assignField(bool* f, const Value& v) { *f = v.number != 0; }
void assignField(std::string* f, const Value& v) { *f = v.text; }
std::string fieldText(int64_t f) { return std::to_string(f); }
std::string fieldText(bool f) { return f ? "1" : "0"; }
std::string fieldText(const std::string& f) { return f; }

// Calls fn(id, text of the field, pointer to the field) for every Agreed row, in table order.
template <typename A, typename Fn>
void forEachAgreed(A& a, Fn fn) {
#define WEFT_PARAM_VISIT_Agreed(acc) fn(Id::acc, fieldText(a.acc), &a.acc);
#define WEFT_PARAM_VISIT_Rank(acc)
#define WEFT_PARAM_VISIT(acc, type, name, aliases, def, allowed, group, scope, doc) WEFT_PARAM_VISIT_##scope(acc)
  WEFT_PARAM_TABLE(WEFT_PARAM_VISIT)
#undef WEFT_PARAM_VISIT
#undef WEFT_PARAM_VISIT_Rank
#undef WEFT_PARAM_VISIT_Agreed
}

}  // namespace

Agreed localAgreed() {
  Agreed a;
  forEachAgreed(a, [](Id id, const std::string&, auto* field) { assignField(field, value(id)); });
  return a;
}

// NUL-separated "NAME", "text" pairs: environment values cannot hold a NUL.
std::string encodeAgreed(const Agreed& a) {
  std::string blob;
  forEachAgreed(a, [&](Id id, const std::string& text, const auto*) {
    blob += kSpecs[static_cast<int>(id)].name;
    blob += '\0';
    blob += text;
    blob += '\0';
  });
  return blob;
}

bool decodeAgreed(const std::string& blob, Agreed* out, std::string* why) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t at = 0; at < blob.size();) {
    size_t nameEnd = blob.find('\0', at);
    size_t textEnd = nameEnd == std::string::npos ? nameEnd : blob.find('\0', nameEnd + 1);
    if (textEnd == std::string::npos) {
      *why = "the agreed settings are truncated";
      return false;
    }
    pairs.emplace_back(blob.substr(at, nameEnd - at), blob.substr(nameEnd + 1, textEnd - nameEnd - 1));
    at = textEnd + 1;
  }
  Agreed a;
  bool ok = true;
  forEachAgreed(a, [&](Id id, const std::string&, auto* field) {
    const Spec& spec = kSpecs[static_cast<int>(id)];
    auto it = std::find_if(pairs.begin(), pairs.end(), [&](const auto& p) { return p.first == spec.name; });
    Value v;
    std::string problem;
    if (!ok) return;
    if (it == pairs.end()) {
      *why = std::string(spec.name) + " is missing (another Weft version?)";
      ok = false;
    } else if (!interpret(spec, parseAllowed(spec), it->second, &v, &problem)) {
      *why = std::string(spec.name) + "=\"" + it->second + "\" " + problem;
      ok = false;
    } else {
      assignField(field, v);
    }
  });
  if (ok) *out = a;
  return ok;
}

std::vector<AgreedDifference> agreedDifferences(const Agreed& mine, const Agreed& inForce) {
  std::vector<std::string> theirs;
  forEachAgreed(inForce, [&](Id, const std::string& text, const auto*) { theirs.push_back(text); });
  std::vector<AgreedDifference> out;
  size_t i = 0;
  forEachAgreed(mine, [&](Id id, const std::string& text, const auto*) {
    if (text != theirs[i]) out.push_back(AgreedDifference{kSpecs[static_cast<int>(id)].name, text, theirs[i]});
    ++i;
  });
  return out;
}

std::vector<ParamView> list() {
  (void)value(Id::buffSize);  // reports the load's warnings like any other accessor
  const State& s = state();
  std::vector<ParamView> out;
  out.reserve(kCount);
  for (int i = 0; i < kCount; ++i) {
    const Spec& spec = kSpecs[i];
    const Value& v = s.values[i];
    ParamView p;
    p.name = spec.name;
    p.aliases = spec.aliases;
    p.type = typeName(spec.type);
    p.defaultValue = spec.def;
    p.value = v.text;
    p.number = v.number;
    p.set = v.set;
    p.doc = spec.doc;
    p.allowed = spec.allowed;
    p.group = groupTitle(spec.group);
    p.agreed = spec.scope == Scope::Agreed;
    p.source = v.source;
    p.envText = v.envText;
    p.problem = v.problem;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::string> loadWarnings() { return state().warnings; }

void reportLoadWarnings() {
  if (!g_reported.exchange(true, std::memory_order_acq_rel))
    for (const std::string& w : state().warnings) WEFT_WARN("%s", w.c_str());
  flushEnvPluginLog();  // every time logging is set up: lines may have waited for any set-up
}

void reloadForTesting() {
  {
    // Forget the current state; the next access reads the environment again, through the same
    // first-use path as a fresh process (which lets tests race many threads through it).
    std::lock_guard<std::mutex> lock(g_loadMutex);
    g_state.store(nullptr, std::memory_order_release);
    g_reported.store(false, std::memory_order_release);
  }
  weft::logResetForTesting();
}

}  // namespace weft::param
