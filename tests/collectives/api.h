// The public headers the collective suites test through, and nothing else of Weft: nccl.h (the
// NCCL 2.28 API), rccl/rccl.h (ncclAlltoAllv) and weft/weft.h (Weft's own extensions).
#pragma once
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "nccl.h"

#if __has_include("rccl/rccl.h")
#include "rccl/rccl.h"
#else
// Until Weft's rccl/rccl.h lands: RCCL's declaration (element counts and displacements).
extern "C" ncclResult_t ncclAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                                      void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                                      ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
#endif

#if __has_include("weft/weft.h")
#include "weft/weft.h"
#else
extern "C" const char* weftGetVersionString(void);
extern "C" ncclResult_t weftCommIsHostMode(ncclComm_t comm, int* isHostMode);
#endif

namespace weft_test {

// The stream type as the collective entry points declare it (cudaStream_t, hipStream_t or Weft's
// own opaque type): read off ncclAllReduce's last parameter so the suite names none of them.
template <typename F>
struct LastParam;
template <typename R, typename... A>
struct LastParam<R (*)(A...)> {
  using type = std::tuple_element_t<sizeof...(A) - 1, std::tuple<A...>>;
};
using Stream = LastParam<decltype(&ncclAllReduce)>::type;

// Host mode takes only the NULL stream; this one is deliberately not NULL.
inline Stream badStream() { return reinterpret_cast<Stream>(static_cast<uintptr_t>(0x1000)); }

}  // namespace weft_test
