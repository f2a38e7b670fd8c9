/* Helpers shared by the header_check_* translation units (C99 and C++). */
#ifndef WEFT_TESTS_ABI_HEADER_CHECK_COMMON_H_
#define WEFT_TESTS_ABI_HEADER_CHECK_COMMON_H_

#include <limits.h>
#include <stddef.h>

/* A compile-time assertion that works in C99 (a negative array size fails to compile). */
#define WEFT_CHECK(cond, tag) typedef char weft_check_##tag[(cond) ? 1 : -1]

/* A cast that is an old-style cast in C and a static_cast in C++ (checked with -Wold-style-cast).
 */
#ifdef __cplusplus
#define WEFT_CAST(T, x) static_cast<T>(x)
#else
#define WEFT_CAST(T, x) ((T)(x))
#endif

/* Referencing the deprecated ncclResetDebugInit on purpose. */
#if defined(__GNUC__) || defined(__clang__)
#define WEFT_BEGIN_ALLOW_DEPRECATED \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wdeprecated-declarations\"")
#define WEFT_END_ALLOW_DEPRECATED _Pragma("GCC diagnostic pop")
#else
#define WEFT_BEGIN_ALLOW_DEPRECATED
#define WEFT_END_ALLOW_DEPRECATED
#endif

#endif /* WEFT_TESTS_ABI_HEADER_CHECK_COMMON_H_ */
