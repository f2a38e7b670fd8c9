// NCCL 2.30's ncclParam* calls, over Weft's parameter registry (base/params.h). A key is a
// parameter's environment name or one of its aliases; values are the ones in effect in this
// process (what weft-info prints), not a communicator's agreed copy.
//
// Types: Weft's registry holds integers (int and size parameters, read as int64), booleans (0 or
// 1) and strings. The integer getters read the first two kinds and refuse a value that does not fit
// the width asked for; ncclParamGetStr reads any parameter as text; ncclParamGet copies an integer
// or boolean as its int64_t bytes and a string as its text with the terminating NUL.
#include <deque>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "api/api_support.h"
#include "base/log.h"
#include "base/params.h"

using namespace weft;

// What a handle points to: the primary name of the parameter it was bound to. Handles live as long
// as the process, as NCCL's do.
struct ncclParamHandle {
  std::string name;
};

namespace {

bool matchesKey(const param::ParamView& p, const std::string& key) {
  if (p.name == key) return true;
  size_t start = 0;
  while (start <= p.aliases.size()) {
    size_t end = p.aliases.find(',', start);
    if (end == std::string::npos) end = p.aliases.size();
    if (p.aliases.compare(start, end - start, key) == 0 && end > start) return true;
    start = end + 1;
  }
  return false;
}

// The parameter called key (primary name or alias), read now; false when there is none.
bool findParam(const std::string& key, param::ParamView* out) {
  for (param::ParamView& p : param::list())
    if (matchesKey(p, key)) {
      *out = std::move(p);
      return true;
    }
  return false;
}

bool isNumeric(const param::ParamView& p) { return p.type != "string"; }

ncclResult_t readBound(const char* fn, ncclParamHandle_t h, param::ParamView* out) {
  if (h == nullptr) return setError(nullptr, ncclInvalidArgument, "%s: handle is NULL", fn);
  if (!findParam(h->name, out))
    return setError(nullptr, ncclInternalError, "%s: parameter %s vanished from the registry", fn, h->name.c_str());
  return ncclSuccess;
}

template <typename T>
ncclResult_t getInteger(const char* fn, ncclParamHandle_t h, T* out) {
  if (out == nullptr) return setError(nullptr, ncclInvalidArgument, "%s: out is NULL", fn);
  param::ParamView p;
  WEFT_CHECK(readBound(fn, h, &p));
  if (!isNumeric(p))
    return setError(nullptr, ncclInvalidArgument, "%s: %s is a string parameter (\"%s\"); read it with ncclParamGetStr",
                    fn, p.name.c_str(), p.value.c_str());
  const int64_t v = p.number;
  bool fits = false;
  if constexpr (std::numeric_limits<T>::is_signed)
    fits = v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
           v <= static_cast<int64_t>(std::numeric_limits<T>::max());
  else
    fits = v >= 0 && static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  if (!fits)
    return setError(nullptr, ncclInvalidArgument, "%s: %s is %lld, which does not fit the type asked for", fn,
                    p.name.c_str(), static_cast<long long>(v));
  *out = static_cast<T>(v);
  return ncclSuccess;
}

}  // namespace

WEFT_ALIAS(ncclResult_t, ncclParamBind, ncclParamHandle_t*, const char*)
WEFT_API ncclResult_t pncclParamBind(ncclParamHandle_t* out, const char* key) {
  return apiGuard("ncclParamBind", [&] {
    const char* fn = "ncclParamBind";
    if (out == nullptr || key == nullptr) return setError(nullptr, ncclInvalidArgument, "%s: out or key is NULL", fn);
    param::ParamView p;
    if (!findParam(key, &p))
      return setError(nullptr, ncclInvalidArgument, "%s: no parameter is called \"%s\" (weft-info lists them)", fn,
                      key);
    static std::mutex mutex;
    static std::deque<ncclParamHandle> handles;  // a deque never moves its elements
    std::lock_guard<std::mutex> lock(mutex);
    for (ncclParamHandle& h : handles)
      if (h.name == p.name) {
        *out = &h;
        return ncclSuccess;
      }
    handles.push_back(ncclParamHandle{p.name});
    *out = &handles.back();
    return ncclSuccess;
  });
}

// The eight typed getters. NOLINT: `type` is a type name, which cannot take parentheses.
#define WEFT_PARAM_GETTER(suffix, type)                                                                             \
  WEFT_ALIAS(ncclResult_t, ncclParamGet##suffix, ncclParamHandle_t, type*) /* NOLINT(bugprone-macro-parentheses) */ \
  WEFT_API ncclResult_t pncclParamGet##suffix(ncclParamHandle_t h,                                                  \
                                              type* out) { /* NOLINT(bugprone-macro-parentheses) */                 \
    return apiGuard("ncclParamGet" #suffix, [&] { return getInteger("ncclParamGet" #suffix, h, out); });            \
  }
WEFT_PARAM_GETTER(I8, int8_t)
WEFT_PARAM_GETTER(I16, int16_t)
WEFT_PARAM_GETTER(I32, int32_t)
WEFT_PARAM_GETTER(I64, int64_t)
WEFT_PARAM_GETTER(U8, uint8_t)
WEFT_PARAM_GETTER(U16, uint16_t)
WEFT_PARAM_GETTER(U32, uint32_t)
WEFT_PARAM_GETTER(U64, uint64_t)
#undef WEFT_PARAM_GETTER

WEFT_ALIAS(ncclResult_t, ncclParamGetStr, ncclParamHandle_t, const char**)
WEFT_API ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char** out) {
  return apiGuard("ncclParamGetStr", [&] {
    const char* fn = "ncclParamGetStr";
    if (out == nullptr) return setError(nullptr, ncclInvalidArgument, "%s: out is NULL", fn);
    param::ParamView p;
    WEFT_CHECK(readBound(fn, h, &p));
    static thread_local std::string text;
    text = p.value;
    *out = text.c_str();
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclParamGet, ncclParamHandle_t, void*, int, int*)
WEFT_API ncclResult_t pncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len) {
  return apiGuard("ncclParamGet", [&] {
    const char* fn = "ncclParamGet";
    if (out == nullptr || len == nullptr) return setError(nullptr, ncclInvalidArgument, "%s: out or len is NULL", fn);
    param::ParamView p;
    WEFT_CHECK(readBound(fn, h, &p));
    std::string bytes = isNumeric(p) ? std::string(reinterpret_cast<const char*>(&p.number), sizeof p.number)
                                     : p.value + '\0';
    *len = static_cast<int>(bytes.size());
    if (maxLen < 0 || static_cast<size_t>(maxLen) < bytes.size())
      return setError(nullptr, ncclInvalidArgument, "%s: %s needs %zu bytes, maxLen is %d", fn, p.name.c_str(),
                      bytes.size(), maxLen);
    memcpy(out, bytes.data(), bytes.size());
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclParamGetParameter, const char*, const char**, int*)
WEFT_API ncclResult_t pncclParamGetParameter(const char* key, const char** value, int* valueLen) {
  return apiGuard("ncclParamGetParameter", [&] {
    const char* fn = "ncclParamGetParameter";
    if (key == nullptr || value == nullptr || valueLen == nullptr)
      return setError(nullptr, ncclInvalidArgument, "%s: key, value or valueLen is NULL", fn);
    param::ParamView p;
    if (!findParam(key, &p))
      return setError(nullptr, ncclInvalidArgument, "%s: no parameter is called \"%s\" (weft-info lists them)", fn,
                      key);
    static thread_local std::string text;
    text = p.value;
    *value = text.c_str();
    *valueLen = static_cast<int>(text.size());
    return ncclSuccess;
  });
}

// Every name in Weft's registry is documented (docs/env.md), so the list is the same with or
// without NCCL_PARAM_DUMP_ALL: there are no private parameters to add.
WEFT_ALIAS(ncclResult_t, ncclParamGetAllParameterKeys, const char***, int*)
WEFT_API ncclResult_t pncclParamGetAllParameterKeys(const char*** table, int* tableLen) {
  return apiGuard("ncclParamGetAllParameterKeys", [&] {
    if (table == nullptr || tableLen == nullptr)
      return setError(nullptr, ncclInvalidArgument, "ncclParamGetAllParameterKeys: table or tableLen is NULL");
    static thread_local std::vector<std::string> names;
    static thread_local std::vector<const char*> pointers;
    names.clear();
    pointers.clear();
    for (const param::ParamView& p : param::list()) names.push_back(p.name);
    for (const std::string& n : names) pointers.push_back(n.c_str());
    *table = pointers.data();
    *tableLen = static_cast<int>(pointers.size());
    return ncclSuccess;
  });
}

extern "C" __attribute__((visibility("default"), weak, alias("pncclParamDumpAll"))) void ncclParamDumpAll(void);
WEFT_API void pncclParamDumpAll(void) {
  (void)apiGuard("ncclParamDumpAll", [] {
    for (const param::ParamView& p : param::list()) {
      const std::string origin = p.source.empty() ? "default" : "from " + p.source;
      WEFT_INFO(kLogEnv, "%s=%s (%s)", p.name.c_str(), p.value.c_str(), origin.c_str());
    }
    return ncclSuccess;
  });
}
