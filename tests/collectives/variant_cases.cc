// Resolves the variant table (variants.cc) against the gtest cases this binary registered, and
// prints it for CTest. Every way the table can stop fitting the binary is an error here: the build
// runs --weft-list-variants (variants.cmake), and so does every test process given a variant.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "dtypes.h"
#include "variants.h"

namespace weft_test {

Pick everyCase() { return {}; }

Pick suite(std::string name) {
  Pick p;
  p.kind = Pick::Kind::kSuite;
  p.suite = std::move(name);
  return p;
}

Pick test(std::string suite, std::string name) {
  Pick p;
  p.kind = Pick::Kind::kTest;
  p.suite = std::move(suite);
  p.test = std::move(name);
  return p;
}

Pick matrix(MatrixSel sel) {
  Pick p;
  p.kind = Pick::Kind::kMatrix;
  p.matrix = std::move(sel);
  return p;
}

namespace {

template <class T, class Name>
std::string listField(const char* field, const std::vector<T>& values, Name name) {
  if (values.empty()) return "";
  std::string s = std::string(" ") + field + "=";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + std::string(name(values[i]));
  return s;
}

std::string dtypeName(ncclDataType_t t) { return dtypeInfo(t).name; }

}  // namespace

std::string Pick::describe() const {
  switch (kind) {
    case Kind::kEvery: return "every case";
    case Kind::kSuite: return "suite " + suite;
    case Kind::kTest: return "test " + suite + "." + test;
    case Kind::kMatrix:
      return "matrix {" + listField("modes", matrix.modes, modeName) + listField("colls", matrix.colls, collName) +
             listField("nranks", matrix.nranks, [](int n) { return std::to_string(n); }) +
             listField("dtypes", matrix.dtypes, dtypeName) + (matrix.tag.empty() ? "" : " tag=" + matrix.tag) + " }";
  }
  return "?";
}

std::vector<std::pair<std::string, std::string>> variantEnv(const Variant& v) {
  std::vector<std::pair<std::string, std::string>> env = {{"WEFT_DEVICE", "host"}};
  env.insert(env.end(), v.env.begin(), v.env.end());
  return env;
}

namespace {

template <class T>
bool inOrEmpty(const std::vector<T>& values, const T& x) {
  return values.empty() || std::find(values.begin(), values.end(), x) != values.end();
}

bool matches(const Pick& p, const TestCase& c) {
  switch (p.kind) {
    case Pick::Kind::kEvery: return true;
    case Pick::Kind::kSuite: return c.suite == p.suite;
    case Pick::Kind::kTest: return c.suite == p.suite && c.name == p.test;
    case Pick::Kind::kMatrix: {
      if (c.matrix == nullptr) return false;
      const MatrixSel& s = p.matrix;
      const MatrixParam& m = *c.matrix;
      return inOrEmpty(s.modes, m.mode) && inOrEmpty(s.colls, m.coll) && inOrEmpty(s.nranks, m.nranks) &&
             inOrEmpty(s.dtypes, m.dtype) && (s.tag.empty() || s.tag == m.tag);
    }
  }
  return false;
}

bool anyMatch(const Pick& p, const std::vector<const TestCase*>& within) {
  return std::any_of(within.begin(), within.end(), [&](const TestCase* c) { return matches(p, *c); });
}

struct Errors {
  std::ostream& out;
  int count = 0;
  std::ostream& add(const std::string& where) {
    ++count;
    return out << "variants: " << where << ": ";
  }
};

// A pick must match some case of `within`; a matrix pick must also meet each value it lists (the
// matrix dropping 16 ranks must not quietly shrink a variant that asks for 2, 5 and 16 ranks).
void checkPick(const Pick& p, const std::vector<const TestCase*>& within, const std::string& where, Errors* err) {
  if (!anyMatch(p, within)) {
    err->add(where) << p.describe() << " matches no case\n";
    return;
  }
  if (p.kind != Pick::Kind::kMatrix) return;
  auto eachValue = [&](auto field) {
    if ((p.matrix.*field).size() < 2) return;
    for (const auto& value : p.matrix.*field) {
      Pick one = p;
      one.matrix.*field = {value};
      if (!anyMatch(one, within))
        err->add(where) << one.describe() << " (part of " << p.describe() << ") matches no case\n";
    }
  };
  eachValue(&MatrixSel::modes);
  eachValue(&MatrixSel::colls);
  eachValue(&MatrixSel::nranks);
  eachValue(&MatrixSel::dtypes);
}

bool allOf(const std::string& s, const char* allowed) { return s.find_first_not_of(allowed) == std::string::npos; }

constexpr const char* kNameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./";
constexpr const char* kVariantChars = "abcdefghijklmnopqrstuvwxyz0123456789.";

// Names and values travel through a CMake list and a gtest filter: no ';', ',', ' ', '*', ':' or '-'.
void checkSpelling(const Variant& v, const std::string& where, Errors* err) {
  if (v.name.empty() || !allOf(v.name, kVariantChars)) err->add(where) << "name must be [a-z0-9.]+\n";
  if (!allOf(v.prefix, kVariantChars) || (!v.prefix.empty() && v.prefix.back() != '.'))
    err->add(where) << "prefix must be empty or [a-z0-9.]+ ending in '.'\n";
  for (const std::string& label : v.labels)
    if (label.empty() || !allOf(label, "abcdefghijklmnopqrstuvwxyz"))
      err->add(where) << "label '" << label << "' must be [a-z]+\n";
  for (const auto& [name, value] : v.env)
    if (name.empty() || !allOf(name, kNameChars) || value.find_first_of(" ,;\n") != std::string::npos)
      err->add(where) << "environment entry " << name << "=" << value << " has a character CTest cannot carry\n";
  for (const Disabled& d : v.disabled)
    if (d.why.empty() || d.why.find_first_of("\n;[]\\\"") != std::string::npos)
      err->add(where) << "a disabled case needs a why of one line without ;[]\\\"\n";
  if (v.timeoutS <= 0) err->add(where) << "timeout must be positive\n";
}

}  // namespace

bool ResolvedTable::resolve(Mode tier, std::ostream& out) {
  Errors err{out};
  const std::string tierName = modeName(tier);
  cases_.clear();
  variants_.clear();

  // The binary's cases, the matrix ones with their parameters (found by name, both ways round).
  std::map<std::string, const MatrixParam*> params;
  for (const MatrixParam& p : matrixFor(tier)) params[std::string(kMatrixTest) + "/" + matrixCaseName(p)] = &p;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& s = *unit.GetTestSuite(i);
    for (int j = 0; j < s.total_test_count(); ++j) {
      TestCase c{s.name(), s.GetTestInfo(j)->name()};
      if (!allOf(c.fullName(), kNameChars))
        err.add(tierName) << "gtest name " << c.fullName() << " must be [A-Za-z0-9_./]+\n";
      if (c.suite == kMatrixSuite) {
        auto it = params.find(c.name);
        if (it == params.end()) {
          err.add(tierName) << c.fullName() << " has no parameters in matrix.cc\n";
        } else {
          c.matrix = it->second;
          params.erase(it);
        }
      }
      cases_.push_back(std::move(c));
    }
  }
  for (const auto& [name, p] : params)
    err.add(tierName) << "matrix.cc case " << name << " is not a registered " << kMatrixSuite << " test\n";
  std::vector<const TestCase*> all;
  for (const TestCase& c : cases_) all.push_back(&c);

  TierTable table = variantTable(tier);
  std::set<std::string> variantNames, ctestNames;
  std::map<const TestCase*, std::string> runBy;  // a case's first variant
  for (Variant& v : table.variants) {
    const std::string where = tierName + " variant " + v.name;
    checkSpelling(v, where, &err);
    if (!variantNames.insert(v.name).second) err.add(where) << "a second variant of this name\n";
    for (const Pick& p : v.picks) checkPick(p, all, where, &err);
    std::vector<const TestCase*> picked;
    for (const TestCase* c : all)
      if (std::any_of(v.picks.begin(), v.picks.end(), [&](const Pick& p) { return matches(p, *c); }))
        picked.push_back(c);
    for (const Pick& p : v.except) checkPick(p, picked, where + " (except)", &err);
    std::erase_if(picked, [&](const TestCase* c) {
      return std::any_of(v.except.begin(), v.except.end(), [&](const Pick& p) { return matches(p, *c); });
    });
    if (picked.empty()) err.add(where) << "selects no case\n";
    for (const Pick& p : v.serial) checkPick(p, picked, where + " (serial)", &err);
    for (const Disabled& d : v.disabled) checkPick(d.pick, picked, where + " (disabled)", &err);

    ResolvedVariant rv{v, {}};
    for (const TestCase* c : picked) {
      VariantCase vc;
      vc.test = c;
      vc.serial = std::any_of(v.serial.begin(), v.serial.end(), [&](const Pick& p) { return matches(p, *c); });
      for (const Disabled& d : v.disabled)
        if (matches(d.pick, *c)) vc.disabledWhy = d.why;
      const std::string ctestName = tierName + "." + v.prefix + c->fullName();
      if (!ctestNames.insert(ctestName).second) err.add(where) << "a second test named " << ctestName << "\n";
      runBy.emplace(c, v.name);
      rv.cases.push_back(std::move(vc));
    }
    variants_.push_back(std::move(rv));
  }

  // Every case runs somewhere, or says why not.
  for (const Disabled& d : table.notRun) {
    checkPick(d.pick, all, tierName + " (not run)", &err);
    for (const TestCase* c : all) {
      if (!matches(d.pick, *c)) continue;
      auto it = runBy.find(c);
      if (it != runBy.end())
        err.add(tierName) << c->fullName() << " is listed as not run, yet variant " << it->second << " runs it\n";
      runBy.emplace(c, "");
    }
  }
  for (const TestCase* c : all)
    if (!runBy.count(c))
      err.add(tierName) << c->fullName() << " runs in no variant (variants.cc: pick it, or list it as not run)\n";
  return err.count == 0;
}

const ResolvedVariant* ResolvedTable::find(const std::string& name) const {
  for (const ResolvedVariant& rv : variants_)
    if (rv.variant.name == name) return &rv;
  return nullptr;
}

void printVariants(Mode tier, const ResolvedTable& table, std::ostream& out) {
  for (const ResolvedVariant& rv : table.variants()) {
    const Variant& v = rv.variant;
    out << "variant " << v.name << " prefix=" << v.prefix << " labels=" << modeName(tier);
    for (const std::string& label : v.labels) out << "," << label;
    out << " timeout=" << v.timeoutS << " env=";
    const char* sep = "";
    for (const auto& [name, value] : variantEnv(v)) {
      out << sep << name << "=" << value;
      sep = ",";
    }
    out << "\n";
    for (const VariantCase& c : rv.cases) {
      out << "case " << v.name << " " << c.test->fullName() << (c.serial ? " serial" : "");
      if (!c.disabledWhy.empty()) out << " disabled: " << c.disabledWhy;
      out << "\n";
    }
  }
}

}  // namespace weft_test
