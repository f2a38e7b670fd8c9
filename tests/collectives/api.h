// The public headers the collective suites test through, and nothing else of Weft: nccl.h (the
// NCCL 2.30 API), rccl/rccl.h (ncclAlltoAllv and RCCL's other extras) and weft/weft.h (Weft's own
// extensions).
#pragma once
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "nccl.h"

#include "rccl/rccl.h"  // after nccl.h: the collectives keep cudaStream_t, RCCL's extras are added
#include "weft/weft.h"

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
