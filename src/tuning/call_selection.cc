#include "tuning/call_selection.h"

#include <cctype>
#include <vector>

#include "base/text.h"
#include "collectives/model/cost_model.h"
#include "collectives/registry.h"
#include "tuning/select.h"

namespace weft {
namespace {

void appendUpper(std::string* out, const char* s) {
  for (; *s != '\0'; ++s) out->push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(*s))));
}

// NCCL's rows that Weft has no algorithm for: a program written for NCCL may name them, and they
// select nothing here rather than being typos.
constexpr const char* kForeignRows[] = {"PAT_SIMPLE",           "NVLS_SIMPLE",
                                        "NVLS_TREE_SIMPLE",     "COLLNET_DIRECT_SIMPLE",
                                        "COLLNET_CHAIN_SIMPLE", "SYMK_"};

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

AlgoProtoRows allRows() {
  AlgoProtoRows all = 0;
  for (int a = 0; a < algorithmCount(); ++a)
    for (int p = 0; p < kNumProtocols; ++p) all |= AlgoProtoRows(1) << rowBit(Algorithm(a), Protocol(p));
  return all;
}

// The rows a tag names; false when neither Weft's rows nor NCCL's start with it.
bool tagRows(const std::string& tag, AlgoProtoRows* rows) {
  *rows = 0;
  bool known = false;
  for (int a = 0; a < algorithmCount(); ++a)
    for (int p = 0; p < kNumProtocols; ++p)
      if (startsWith(rowName(Algorithm(a), Protocol(p)), tag)) {
        *rows |= AlgoProtoRows(1) << rowBit(Algorithm(a), Protocol(p));
        known = true;
      }
  for (const char* r : kForeignRows) known |= startsWith(r, tag) || startsWith(tag, r);
  return known;
}

}  // namespace

std::string rowName(Algorithm a, Protocol p) {
  std::string name;
  appendUpper(&name, algorithmName(a));
  name.push_back('_');
  appendUpper(&name, protocolName(p));
  return name;
}

bool parseAlgSelection(const char* text, AlgoProtoRows* rows, std::string* why) {
  *rows = 0;
  if (text == nullptr) return true;
  std::string s;
  for (const char* c = text; *c != '\0'; ++c)
    if (!std::isspace(static_cast<unsigned char>(*c))) s.push_back(static_cast<char>(std::toupper(*c)));
  if (s.empty()) return true;
  const AlgoProtoRows all = allRows();
  for (const std::string& term : splitAt(s, ',')) {
    AlgoProtoRows termRows = all;
    for (const std::string& factor : splitAt(term, '+')) {
      const bool negate = !factor.empty() && factor[0] == '^';
      const std::string tag = negate ? factor.substr(1) : factor;
      if (tag.empty()) {
        why->assign(1, '"').append(text).append("\" has an empty term or factor");
        return false;
      }
      AlgoProtoRows tr = 0;
      if (!tagRows(tag, &tr)) {
        why->assign(1, '"').append(tag).append("\" names no algorithm (Weft's rows are ALGORITHM_PROTOCOL, e.g. ");
        why->append(rowName(Algorithm(0), Protocol::kSimple)).append(")");
        return false;
      }
      termRows &= negate ? (all & ~tr) : tr;
    }
    *rows |= termRows;
  }
  return true;
}

bool resolveCallSelection(const char* text, bool force, const Tuner* tuner, const CommShape& shape, const Task& task,
                          AlgoProtoRows* rows, std::string* why) {
  *rows = 0;
  AlgoProtoRows asked = 0;
  std::string bad;
  const bool parsed = parseAlgSelection(text, &asked, &bad);
  if (parsed && asked == 0 && (text == nullptr || text[0] == '\0')) return true;  // automatic
  // What can run this call: an eligible algorithm, with a protocol the tuner costs for this size
  // (the kinds the tuner does not tune run with Simple).
  AlgoProtoRows runnable = 0;
  const int ci = tunedCollIndex(task.kind);
  const int bucket = Tuner::bucketOf(tunedBytes(shape.nranks, task));
  for (int a = 0; a < algorithmCount(); ++a) {
    if (eligibility(Algorithm(a), shape, task) == Eligibility::kNo) continue;
    for (int p = 0; p < kNumProtocols; ++p) {
      const bool costed = ci >= 0 && tuner != nullptr ? tuner->cost(ci, bucket, Algorithm(a), Protocol(p)) >= 0
                                                      : Protocol(p) == Protocol::kSimple;
      if (costed) runnable |= AlgoProtoRows(1) << rowBit(Algorithm(a), Protocol(p));
    }
  }
  if (parsed && (asked & runnable) != 0) {
    *rows = asked & runnable;
    return true;
  }
  if (!force) return true;  // falls back to the automatic choice
  if (!parsed) {
    *why = "algSelection " + bad;
    return false;
  }
  std::string can;
  for (int b = 0; b < 64; ++b)
    if (runnable >> b & 1)
      can += (can.empty() ? "" : ", ") + rowName(Algorithm(b / kNumProtocols), Protocol(b % kNumProtocols));
  *why = "algSelection \"" + std::string(text) + "\" selects nothing that can run this call here (it can run with: " +
         (can.empty() ? std::string("nothing") : can) +
         "); set forceAlgSelection = 0 to fall back to the automatic choice";
  return false;
}

}  // namespace weft
