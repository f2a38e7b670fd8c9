#include "tuning/algo_filter.h"

#include <strings.h>

#include "base/text.h"
#include "collectives/registry.h"

namespace weft {
namespace {

constexpr uint32_t kAllProtos = (1u << kNumProtocols) - 1;

// NCCL's algorithms without a Weft counterpart: valid in NCCL_ALGO, but they select nothing.
constexpr const char* kForeignAlgos[] = {"CollNetDirect", "CollNetChain",   "NVLS",          "NVLSTree",
                                         "PAT",           "CollNet_Direct", "CollNet_Chain", "NVLS_Tree"};

int collByName(const std::string& name) {
  for (int c = 0; c < kNumTunedColls; ++c)
    if (strcasecmp(name.c_str(), collName(tunedCollKind(c))) == 0) return c;
  return -1;
}

// A registered algorithm the tuner chooses among (point-to-point patterns are never tuned, so
// their names mean nothing here).
bool findTunedAlgorithm(const std::string& name, Algorithm* out) {
  return findAlgorithm(name, out) && algorithmDesc(*out).cost != nullptr;
}

// Parses one element; returns false for an unknown name. *bit is 0 for a foreign NCCL name.
bool elementBit(const std::string& name, bool algo, uint32_t* bit) {
  if (algo) {
    Algorithm a;
    if (findTunedAlgorithm(name, &a)) {
      *bit = 1u << int(a);
      return true;
    }
    for (const char* f : kForeignAlgos)
      if (strcasecmp(name.c_str(), f) == 0) {
        *bit = 0;
        return true;
      }
    return false;
  }
  Protocol p;
  if (!parseProtocolName(name, &p)) return false;
  *bit = 1u << int(p);
  return true;
}

void parseSetting(const std::string& text, const char* var, bool algo, uint32_t* masks,
                  std::vector<std::string>* warnings) {
  const uint32_t all = algo ? allAlgorithmsMask() : kAllProtos;
  auto warn = [&](const std::string& what) {
    warnings->push_back(std::string(var) + "=\"" + text + "\": " + what + " (ignored)");
  };
  std::vector<std::string> entries = splitAt(text, ';');
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string entry = trimBlanks(entries[i]);
    if (entry.empty()) continue;
    std::string list = entry;
    bool colls[kNumTunedColls];
    size_t colon = entry.find(':');
    if (colon == std::string::npos) {
      if (i != 0) {
        warn("entry \"" + entry + "\" needs a collective prefix (only the first entry may go without one)");
        continue;
      }
      for (bool& c : colls) c = true;
    } else {
      for (bool& c : colls) c = false;
      bool any = false;
      for (const std::string& raw : splitAt(entry.substr(0, colon), ',')) {
        int c = collByName(trimBlanks(raw));
        if (c < 0) {
          warn("unknown collective \"" + trimBlanks(raw) + "\"");
          continue;
        }
        colls[c] = any = true;
      }
      if (!any) continue;
      list = trimBlanks(entry.substr(colon + 1));
    }
    bool exclude = !list.empty() && list[0] == '^';
    if (exclude) list = trimBlanks(list.substr(1));
    uint32_t named = 0;
    for (const std::string& raw : splitAt(list, ',')) {
      std::string name = trimBlanks(raw);
      uint32_t bit;
      if (name.empty()) continue;
      if (!elementBit(name, algo, &bit)) {
        warn(std::string("unknown ") + (algo ? "algorithm" : "protocol") + " \"" + name + "\"");
        continue;
      }
      named |= bit;
    }
    for (int c = 0; c < kNumTunedColls; ++c)
      if (colls[c]) masks[c] = exclude ? all & ~named : named;
  }
}

void parseOverride(const std::string& text, const char* var, bool algo, int* out, std::vector<std::string>* warnings) {
  *out = -1;
  std::string name = trimBlanks(text);
  if (name.empty()) return;
  if (algo) {
    Algorithm a;
    if (findTunedAlgorithm(name, &a)) {
      *out = int(a);
      return;
    }
  } else {
    Protocol p;
    if (parseProtocolName(name, &p)) {
      *out = int(p);
      return;
    }
  }
  warnings->push_back(std::string(var) + "=\"" + text + "\": unknown " + (algo ? "algorithm" : "protocol") + " \"" +
                      name + "\" (ignored)");
}

}  // namespace

AlgoProtoFilter::AlgoProtoFilter() {
  for (int c = 0; c < kNumTunedColls; ++c) {
    algos[c] = allAlgorithmsMask();
    protos[c] = kAllProtos;
  }
}

void parseAlgoSetting(const std::string& text, const char* varName, AlgoProtoFilter* f,
                      std::vector<std::string>* warnings) {
  parseSetting(text, varName, true, f->algos, warnings);
}

void parseProtoSetting(const std::string& text, const char* varName, AlgoProtoFilter* f,
                       std::vector<std::string>* warnings) {
  parseSetting(text, varName, false, f->protos, warnings);
}

void parseOverrideAlgo(const std::string& text, int* out, std::vector<std::string>* warnings) {
  parseOverride(text, "RCCL_OVERRIDE_ALGO", true, out, warnings);
}

void parseOverrideProto(const std::string& text, int* out, std::vector<std::string>* warnings) {
  parseOverride(text, "RCCL_OVERRIDE_PROTO", false, out, warnings);
}

}  // namespace weft
