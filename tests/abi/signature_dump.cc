// Prints the C++ view of every declaration in <nccl.h>: each function's full type (as the compiler
// spells it and as the C++ ABI mangles it), each public type's name and mangled name, each
// struct field's type and each enum's underlying type. Built
// twice, against Weft's include/ and NVIDIA's nccl.h; the abi_signatures test requires identical
// output. This catches what layout_dump.c cannot see: a parameter of the wrong type or
// constness, a missing pncclX twin, or a struct tag that differs (which would change the mangled
// names of C++ functions that take NCCL types, breaking C++ libraries built against NCCL).
// Against an older reference header, both copies print only the declarations that version has and
// leave out ncclConfig_t's struct tag, which NCCL renames with each version of the struct
// (layout_dump.c explains WEFT_ABI_REFERENCE_VERSION and WEFT_ABI_WEFT_VERSION).
#include <nccl.h>

// The build says which header this copy must see; WEFT_STREAM_T exists only in Weft's.
#if defined(WEFT_ABI_EXPECT_NVIDIA_HEADER) && defined(WEFT_STREAM_T)
#error "compiled against Weft's nccl.h, but NVIDIA's was expected: check the include path"
#endif
#if defined(WEFT_ABI_EXPECT_WEFT_HEADER) && !defined(WEFT_STREAM_T)
#error "compiled against another nccl.h, but Weft's was expected: check the include path"
#endif

#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <typeinfo>

#include "abi_versions.h"

namespace {

template <typename T>
const char* prettyName() {
  return __PRETTY_FUNCTION__;
}

// The "T = ..." part of __PRETTY_FUNCTION__ (GCC: "[with T = X]", Clang: "[T = X]"); X may
// itself contain brackets (arrays), so it ends at the last ']'.
std::string typeOf(const char* pretty) {
  std::string s = pretty;
  size_t b = s.find("T = ");
  size_t e = s.rfind(']');
  if (b == std::string::npos || e == std::string::npos || e < b + 4) return s;
  return s.substr(b + 4, e - (b + 4));
}

template <typename T>
void dumpType(const char* name) {
  std::printf("type %s = %s [%s]\n", name, typeOf(prettyName<T>()).c_str(), typeid(T).name());
}

// Against a reference older than Weft's ncclConfig_t (abi_versions.h), the config's versioned tag
// (ncclConfig_v22800, _v23000, ...) is written as ncclConfig_vXXXXX, so a function taking a config
// is compared on everything else.
std::string sameTags(std::string text) {
  if (WEFT_ABI_SAME_CONFIG) return text;
  const std::string tag = "ncclConfig_v";
  for (size_t at = text.find(tag); at != std::string::npos; at = text.find(tag, at + 1))
    for (size_t i = at + tag.size();
         i < text.size() && i < at + tag.size() + 5 && text[i] >= '0' && text[i] <= '9'; ++i)
      text[i] = 'X';
  return text;
}

template <typename F>
void dumpFn(const char* name) {
  std::printf("function %s : %s [%s]\n", name, sameTags(typeOf(prettyName<F>())).c_str(),
              sameTags(typeid(F).name()).c_str());
}

}  // namespace

#define TYPE(T) dumpType<T>(#T)
#define UNDERLYING(E)                        \
  std::printf("enum %s underlying %s\n", #E, \
              typeOf(prettyName<std::underlying_type<E>::type>()).c_str())
#define FIELD(S, f) \
  std::printf("field %s.%s : %s\n", #S, #f, typeOf(prettyName<decltype(S::f)>()).c_str())
#define FN(name)                  \
  dumpFn<decltype(&name)>(#name); \
  dumpFn<decltype(&p##name)>("p" #name)

int main() {
  std::printf("# nccl.h C++ signatures (reference NCCL %d)\n", WEFT_ABI_REFERENCE_VERSION);
  TYPE(ncclComm_t);
  TYPE(ncclWindow_t);
  TYPE(ncclUniqueId);
  TYPE(ncclResult_t);
  TYPE(ncclRedOp_dummy_t);
  TYPE(ncclRedOp_t);
  TYPE(ncclDataType_t);
  TYPE(ncclScalarResidence_t);
#if WEFT_ABI_SAME_CONFIG
  TYPE(ncclConfig_t);
  TYPE(ncclHostCftMode_t);
  TYPE(ncclNvlsHostMode_t);
  FIELD(ncclConfig_t, launchOrderImplicit);
  FIELD(ncclConfig_t, numRmaSig);
  FIELD(ncclConfig_t, rmaEagerInit);
  FIELD(ncclConfig_t, hostCftMode);
  FIELD(ncclConfig_t, nvlsHostMode);
#endif
  TYPE(ncclSimInfo_t);
#if WEFT_ABI_HAS_2_30
  TYPE(ncclCommMemStat_t);
  TYPE(ncclWaitSignalDesc_t);
  TYPE(ncclParamHandle_t);
  UNDERLYING(ncclCommMemStat_t);
  FIELD(ncclWaitSignalDesc_t, opCnt);
  FIELD(ncclWaitSignalDesc_t, peer);
  FIELD(ncclWaitSignalDesc_t, sigIdx);
  FIELD(ncclWaitSignalDesc_t, ctx);
  FIELD(ncclConfig_t, graphUsageMode);
  FIELD(ncclConfig_t, numRmaCtx);
  FIELD(ncclConfig_t, maxP2pPeers);
  FIELD(ncclConfig_t, graphStreamOrdering);
#endif
  TYPE(cudaStream_t);
  UNDERLYING(ncclResult_t);
  UNDERLYING(ncclRedOp_dummy_t);
  UNDERLYING(ncclRedOp_t);
  UNDERLYING(ncclDataType_t);
  UNDERLYING(ncclScalarResidence_t);
  FIELD(ncclUniqueId, internal);
  FIELD(ncclConfig_t, size);
  FIELD(ncclConfig_t, magic);
  FIELD(ncclConfig_t, version);
  FIELD(ncclConfig_t, blocking);
  FIELD(ncclConfig_t, cgaClusterSize);
  FIELD(ncclConfig_t, minCTAs);
  FIELD(ncclConfig_t, maxCTAs);
  FIELD(ncclConfig_t, netName);
  FIELD(ncclConfig_t, splitShare);
  FIELD(ncclConfig_t, trafficClass);
  FIELD(ncclConfig_t, commName);
  FIELD(ncclConfig_t, collnetEnable);
  FIELD(ncclConfig_t, CTAPolicy);
  FIELD(ncclConfig_t, shrinkShare);
  FIELD(ncclConfig_t, nvlsCTAs);
  FIELD(ncclConfig_t, nChannelsPerNetPeer);
  FIELD(ncclConfig_t, nvlinkCentricSched);
  FIELD(ncclSimInfo_t, size);
  FIELD(ncclSimInfo_t, magic);
  FIELD(ncclSimInfo_t, version);
  FIELD(ncclSimInfo_t, estimatedTime);
  std::printf("type decltype(NCCL_CONFIG_UNDEF_INT) = %s\n",
              typeOf(prettyName<decltype(NCCL_CONFIG_UNDEF_INT)>()).c_str());
  std::printf("type decltype(NCCL_UNDEF_FLOAT) = %s\n",
              typeOf(prettyName<decltype(NCCL_UNDEF_FLOAT)>()).c_str());
  std::printf("type decltype(NCCL_VERSION_CODE) = %s\n",
              typeOf(prettyName<decltype(NCCL_VERSION_CODE)>()).c_str());

  FN(ncclMemAlloc);
  FN(ncclMemFree);
  FN(ncclGetVersion);
  FN(ncclGetUniqueId);
  FN(ncclCommInitRankConfig);
  FN(ncclCommInitRank);
  FN(ncclCommInitAll);
  FN(ncclCommFinalize);
  FN(ncclCommDestroy);
  FN(ncclCommAbort);
  FN(ncclCommRevoke);
  FN(ncclCommSplit);
  FN(ncclCommShrink);
  FN(ncclCommInitRankScalable);
  FN(ncclGetErrorString);
  FN(ncclGetLastError);
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
  // From 2.30 NCCL's header declares it only when NCCL_OS_LINUX is defined (NCCL's own build);
  // for other programs it is an empty macro. The library still exports it (abi_symbols).
#if WEFT_ABI_REFERENCE_VERSION < 23000 || defined(NCCL_OS_LINUX)
  FN(ncclResetDebugInit);
#endif
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
  FN(ncclCommGetAsyncError);
  FN(ncclCommCount);
  FN(ncclCommCuDevice);
  FN(ncclCommUserRank);
  FN(ncclCommRegister);
  FN(ncclCommDeregister);
  FN(ncclCommWindowRegister);
  FN(ncclCommWindowDeregister);
  FN(ncclRedOpCreatePreMulSum);
  FN(ncclRedOpDestroy);
  FN(ncclReduce);
  FN(ncclBcast);
  FN(ncclBroadcast);
  FN(ncclAllReduce);
  FN(ncclReduceScatter);
  FN(ncclAllGather);
  FN(ncclAlltoAll);
  FN(ncclGather);
  FN(ncclScatter);
  FN(ncclSend);
  FN(ncclRecv);
  FN(ncclGroupStart);
  FN(ncclGroupEnd);
  FN(ncclGroupSimulateEnd);
#if WEFT_ABI_HAS_2_30
  FN(ncclCommGetUniqueId);
  FN(ncclCommGrow);
  FN(ncclCommSuspend);
  FN(ncclCommResume);
  FN(ncclCommMemStats);
  FN(ncclWinGetUserPtr);
  FN(ncclPutSignal);
  FN(ncclSignal);
  FN(ncclWaitSignal);
  FN(ncclParamBind);
  FN(ncclParamGetI8);
  FN(ncclParamGetI16);
  FN(ncclParamGetI32);
  FN(ncclParamGetI64);
  FN(ncclParamGetU8);
  FN(ncclParamGetU16);
  FN(ncclParamGetU32);
  FN(ncclParamGetU64);
  FN(ncclParamGetStr);
  FN(ncclParamGet);
  FN(ncclParamGetParameter);
  FN(ncclParamGetAllParameterKeys);
  FN(ncclParamDumpAll);
#endif
  return 0;
}
