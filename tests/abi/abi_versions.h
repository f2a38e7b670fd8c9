/* The two NCCL versions the ABI dumps compare (layout_dump.c explains why): the reference header's
 * and Weft's, as tests/abi/CMakeLists.txt passes them to both builds of each dump; a dump built by
 * hand compares a header with itself. Include after <nccl.h>. */
#ifndef WEFT_TESTS_ABI_VERSIONS_H_
#define WEFT_TESTS_ABI_VERSIONS_H_

#ifndef WEFT_ABI_REFERENCE_VERSION
#define WEFT_ABI_REFERENCE_VERSION NCCL_VERSION_CODE
#endif
#ifndef WEFT_ABI_WEFT_VERSION
#define WEFT_ABI_WEFT_VERSION NCCL_VERSION_CODE
#endif
#define WEFT_ABI_SAME_VERSION (WEFT_ABI_REFERENCE_VERSION == WEFT_ABI_WEFT_VERSION)
/* NCCL 2.30's additions, when both headers have them. */
#define WEFT_ABI_HAS_2_30 (WEFT_ABI_REFERENCE_VERSION >= 23000 && NCCL_VERSION_CODE >= 23000)
/* Weft's ncclConfig_t is NCCL 2.32.3's, ahead of the version code it states (the 2.31/2.32 fields
   are declared beside the 2.30.7 API): its size, tag and initializer bytes compare only with a
   2.32 reference. Against an older one, the fields both have are compared. */
#define WEFT_ABI_SAME_CONFIG (WEFT_ABI_REFERENCE_VERSION >= 23200)

#endif
