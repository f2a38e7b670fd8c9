/*
 * Weft: the NCCL C API (version 2.30.7), as provided by libnccl.so.2 built from Weft.
 *
 * A program written for NCCL compiles against this header unchanged, and a program compiled
 * against NCCL's own header runs against Weft's library unchanged: every type, enum value,
 * structure layout, macro value and function signature below is the same as in NCCL 2.30.7.
 * Programs built against an older nccl.h (2.14 and later) run unchanged too: their shorter
 * ncclConfig_t is read by its size (docs/api.md).
 *
 * The header is valid C (C99 and later) and C++ (C++11 and later), with or without a GPU
 * toolkit:
 *   - CUDA: with nvcc, or when <cuda_runtime.h> can be found, it is included (as NCCL's header
 *     does) and the stream arguments are cudaStream_t.
 *   - HIP on AMD (__HIP_PLATFORM_AMD__, or clang's HIP mode): the stream arguments are
 *     hipStream_t; <hip/hip_runtime.h> is included when it can be found.
 *   - Neither (Weft's host mode): cudaStream_t is declared here as the same opaque pointer type
 *     CUDA uses, so including <cuda_runtime.h> afterwards is still fine. Pass NULL as the stream.
 * Define WEFT_NO_CUDA_HEADERS before including this file to keep CUDA's headers out even when
 * they are on the include path. WEFT_STREAM_T names the stream type the collectives take, and
 * WEFT_EVENT_T the event type of ncclCollConfig_t.
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Stream type -------------------------------------------------------------------------- */

#if (defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__) || defined(__HIP__) || \
     defined(WEFT_USE_HIP_STREAM)) &&                                                        \
    !defined(__HIP_PLATFORM_NVIDIA__) && !defined(__HIP_PLATFORM_NVCC__)
/* HIP on AMD GPUs (or rccl/rccl.h asked for hipStream_t): collectives take a hipStream_t. */
#  if defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__) || defined(__HIP__)
#    if defined(__has_include)
#      if __has_include(<hip/hip_runtime.h>)
#        include <hip/hip_runtime.h>
#        include <hip/hip_fp16.h>
#      endif
#    endif
#  endif
#  if !defined(HIP_INCLUDE_HIP_HIP_RUNTIME_API_H) && !defined(WEFT_HIP_STREAM_DECLARED_)
#    define WEFT_HIP_STREAM_DECLARED_ 1
/* The same declaration as HIP's own, so HIP's headers may still be included later. */
typedef struct ihipStream_t* hipStream_t;
typedef struct ihipEvent_t* hipEvent_t;
#  endif
#  define WEFT_STREAM_T hipStream_t
#  define WEFT_EVENT_T hipEvent_t
#else
/* CUDA, or host mode: collectives take a cudaStream_t. */
#  if !defined(WEFT_NO_CUDA_HEADERS)
#    if defined(__CUDACC__)
#      define WEFT_INCLUDE_CUDA_HEADERS_ 1
#    elif defined(__has_include)
#      if __has_include(<cuda_runtime.h>)
#        define WEFT_INCLUDE_CUDA_HEADERS_ 1
#      endif
#    endif
#  endif
#  if defined(WEFT_INCLUDE_CUDA_HEADERS_)
#    include <cuda_runtime.h>
#    include <cuda_fp16.h>
#    if defined(CUDART_VERSION) && CUDART_VERSION >= 11000
#      include <cuda_bf16.h>
#    endif
#    if defined(__cplusplus) && defined(CUDART_VERSION) && CUDART_VERSION >= 11080
#      include <cuda_fp8.h>
#    endif
#    undef WEFT_INCLUDE_CUDA_HEADERS_
#  elif !defined(__DRIVER_TYPES_H__) && !defined(WEFT_CUDA_STREAM_DECLARED_)
#    define WEFT_CUDA_STREAM_DECLARED_ 1
/* The same declaration as CUDA's own (driver_types.h), so <cuda_runtime.h> may still be included
 * later. Host-mode programs pass NULL. */
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
#  endif
#  define WEFT_STREAM_T cudaStream_t
#  define WEFT_EVENT_T cudaEvent_t
#endif

/* ---- Version -------------------------------------------------------------------------------- */

#define NCCL_MAJOR 2
#define NCCL_MINOR 30
#define NCCL_PATCH 7
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 23007
/* Encodes a version as NCCL does: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9 on. */
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? ((X) * 1000 + (Y) * 100 + (Z)) : ((X) * 10000 + (Y) * 100 + (Z)))

/* The functions below are the library's exported entry points: they keep default visibility even
 * in code built with -fvisibility=hidden or inside a "#pragma GCC visibility push(hidden)". */
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Handles and identifiers ---------------------------------------------------------------- */

/* A communicator: one rank's membership in a group of ranks. */
typedef struct ncclComm* ncclComm_t;
/* A registered memory window (ncclCommWindowRegister). */
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
/* The rendezvous token that every rank of a new communicator must be given. Treat as opaque. */
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* ---- Results -------------------------------------------------------------------------------- */

typedef enum {
  ncclSuccess = 0,            /* the call did what was asked */
  ncclUnhandledCudaError = 1, /* a GPU runtime call failed */
  ncclSystemError = 2,        /* an operating system call failed (sockets, memory, files) */
  ncclInternalError = 3,      /* a bug in Weft; please report it */
  ncclInvalidArgument = 4,    /* a bad argument (pointer, count, type, op, rank, ...) */
  ncclInvalidUsage = 5,       /* a call made in the wrong state or order */
  ncclRemoteError = 6,        /* a peer failed, vanished or aborted */
  ncclInProgress = 7,         /* a non-blocking call has not finished yet */
  ncclTimeout = 8,            /* NCCL 2.30: a device-side wait ran out of time (never returned by
                                 Weft's host API, as by NCCL's; see docs/api.md) */
  ncclNumResults = 9
} ncclResult_t;

/* ---- Configuration -------------------------------------------------------------------------- */

/* "Not set" values for ncclConfig_t fields: Weft picks its default (or the environment's). */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
/* Color for ncclCommSplit: this rank joins no new communicator (it gets NULL). */
#define NCCL_SPLIT_NOCOLOR (-1)
#define NCCL_UNDEF_FLOAT (-1.0f)
/* The magic number every *_INITIALIZER stores: how the library recognises an initialised struct. */
#define NCCL_API_MAGIC 0xcafebeef

/* Flags for ncclCommWindowRegister. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_STRICT_ORDERING 0x02 /* one-sided puts to the window land in issue order */
/* NCCL 2.32: register the window only for GPU-initiated networking, or only for counted CFT. */
#define NCCL_WIN_GIN_ONLY 0x04
#define NCCL_WIN_CFT_COUNTED 0x08
/* Alignment (bytes) a symmetric window's buffer must have. */
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* Values for ncclConfig_t.CTAPolicy. */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* Flags for ncclCommShrink: shrink a healthy parent, or abort the parent's work first. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* Flags for ncclCommRevoke (only the default exists). */
#define NCCL_REVOKE_DEFAULT 0x00

/* Values for ncclConfig_t.hostCftMode (NCCL 2.31). */
typedef enum {
  ncclHostCftDefault = NCCL_CONFIG_UNDEF_INT,
  ncclHostCftEnable = 1,
  ncclHostCftDisable = 2,
  ncclHostCftFallback = 3
} ncclHostCftMode_t;

/* Values for ncclConfig_t.nvlsHostMode (NCCL 2.32): 0 enables every host NVLS component, the
   DisableX bits turn single components off, INT_MAX turns all of them off. */
typedef enum {
  ncclNvlsHostModeDefault = NCCL_CONFIG_UNDEF_INT,
  ncclNvlsHostModeEnable = 0,
  ncclNvlsHostModeDisableTransport = 1 << 0,
  ncclNvlsHostModeDisableSymmetricMultimem = 1 << 1,
  ncclNvlsHostModeDisable = INT_MAX
} ncclNvlsHostMode_t;

/* Options for a new communicator. Always start from NCCL_CONFIG_INITIALIZER, then set fields. The
   layout is NCCL 2.32.3's; a caller built against an older header passes a shorter struct, which
   is read by its size. */
typedef struct ncclConfig_v23100 {
  size_t size;           /* set by the initializer; do not change */
  unsigned int magic;    /* set by the initializer; do not change */
  unsigned int version;  /* set by the initializer; do not change */
  int blocking;          /* 1: calls return when done; 0: they may return ncclInProgress */
  int cgaClusterSize;    /* GPU thread-block cluster size (ignored in host mode) */
  int minCTAs;           /* fewest channels to use */
  int maxCTAs;           /* most channels to use */
  const char* netName;   /* network transport to use, by name */
  int splitShare;        /* 1: communicators split from this one may share its resources */
  int trafficClass;      /* network traffic class */
  const char* commName;  /* a name that shows up in logs */
  int collnetEnable;     /* 1: allow in-network reductions */
  int CTAPolicy;         /* one of NCCL_CTA_POLICY_* */
  int shrinkShare;       /* 1: communicators shrunk from this one may share its resources */
  int nvlsCTAs;          /* channels for NVLink SHARP algorithms */
  int nChannelsPerNetPeer; /* channels per network peer */
  int nvlinkCentricSched;  /* 1: schedule with NVLink-centric priorities */
  int graphUsageMode;      /* NCCL 2.30: how CUDA graphs will use the communicator (GPU only) */
  int numRmaCtx;           /* NCCL 2.30: one-sided (RMA) contexts, the ctx argument's range */
  int maxP2pPeers;         /* NCCL 2.30: most peers a rank exchanges point-to-point data with */
  int graphStreamOrdering; /* NCCL 2.30: order of graph-captured work between streams (GPU only) */
  int launchOrderImplicit; /* NCCL 2.31: 1 = kernel launch order implies execution order (GPU only) */
  int numRmaSig;           /* NCCL 2.31: one-sided signals per context, the sigIdx argument's range */
  int rmaEagerInit;        /* NCCL 2.31: 1 = set one-sided resources up at init, not on first use */
  int hostCftMode;         /* NCCL 2.31: a ncclHostCftMode_t */
  int nvlsHostMode;        /* NCCL 2.32: a ncclNvlsHostMode_t, or DisableX bits (GPU only) */
} ncclConfig_t;

/* Initial value for every ncclConfig_t: all options unset. */
#define NCCL_CONFIG_INITIALIZER                                                     \
  {                                                                                 \
    sizeof(ncclConfig_t),                             /* size */                    \
    NCCL_API_MAGIC,                                   /* magic */                   \
    NCCL_VERSION_CODE,                                /* version */                 \
    NCCL_CONFIG_UNDEF_INT,                            /* blocking */                \
    NCCL_CONFIG_UNDEF_INT,                            /* cgaClusterSize */          \
    NCCL_CONFIG_UNDEF_INT,                            /* minCTAs */                 \
    NCCL_CONFIG_UNDEF_INT,                            /* maxCTAs */                 \
    NCCL_CONFIG_UNDEF_PTR,                            /* netName */                 \
    NCCL_CONFIG_UNDEF_INT,                            /* splitShare */              \
    NCCL_CONFIG_UNDEF_INT,                            /* trafficClass */            \
    NCCL_CONFIG_UNDEF_PTR,                            /* commName */                \
    NCCL_CONFIG_UNDEF_INT,                            /* collnetEnable */           \
    NCCL_CONFIG_UNDEF_INT,                            /* CTAPolicy */               \
    NCCL_CONFIG_UNDEF_INT,                            /* shrinkShare */             \
    NCCL_CONFIG_UNDEF_INT,                            /* nvlsCTAs */                \
    NCCL_CONFIG_UNDEF_INT,                            /* nChannelsPerNetPeer */     \
    NCCL_CONFIG_UNDEF_INT,                            /* nvlinkCentricSched */      \
    NCCL_CONFIG_UNDEF_INT,                            /* graphUsageMode */          \
    NCCL_CONFIG_UNDEF_INT,                            /* numRmaCtx */               \
    NCCL_CONFIG_UNDEF_INT,                            /* maxP2pPeers */             \
    NCCL_CONFIG_UNDEF_INT,                            /* graphStreamOrdering */     \
    NCCL_CONFIG_UNDEF_INT,                            /* launchOrderImplicit */     \
    NCCL_CONFIG_UNDEF_INT,                            /* numRmaSig */               \
    NCCL_CONFIG_UNDEF_INT,                            /* rmaEagerInit */            \
    NCCL_CONFIG_UNDEF_INT,                            /* hostCftMode */             \
    NCCL_CONFIG_UNDEF_INT,                            /* nvlsHostMode */            \
  }

/* Encryption of the library's own TCP sockets (NCCL 2.32's ncclSetEncryption; Weft declares it
   beside the 2.30.7 API). Always start from NCCL_ENCRYPTION_CONFIG_INITIALIZER, then set fields. */
#define NCCL_ENCRYPTION_MODE_NONE 0 /* plaintext (the default) */
#define NCCL_ENCRYPTION_MODE_PSK 1  /* TLS 1.3 with the pre-shared key in psk */
typedef struct ncclEncryptionConfig_v23200 {
  size_t size;          /* set by the initializer; do not change */
  unsigned int magic;   /* set by the initializer; do not change */
  unsigned int version; /* set by the initializer; do not change */
  int mode;             /* NCCL_ENCRYPTION_MODE_NONE or NCCL_ENCRYPTION_MODE_PSK */
  const char* psk;      /* PSK mode: NUL-terminated key of at least 32 bytes, copied by the call */
} ncclEncryptionConfig_t;

#define NCCL_ENCRYPTION_CONFIG_INITIALIZER                                          \
  {                                                                                 \
    sizeof(ncclEncryptionConfig_t),                   /* size */                    \
    0xcafebeef,                                       /* magic */                   \
    NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */                 \
    NCCL_ENCRYPTION_MODE_NONE,                        /* mode */                    \
    NCCL_CONFIG_UNDEF_PTR,                            /* psk */                     \
  }

/* One vendor option of a ncclCollConfig_t (NCCL 2.31): a list linked through next, keyed by a
   vendor's own id. Weft defines no options and ignores the list, as NVIDIA's library does. */
typedef struct ncclConfigExt {
  struct ncclConfigExt* next; /* the next option, or NULL */
  struct {
    int vendorId; /* the vendor's id, non-zero */
    int optionId; /* the option, numbered by its vendor */
  } key;
  union {
    int i;
    const char* s;
    void* raw;
  } val;
} ncclConfigExt_t;

/* Settings of one collective call, for the nccl<Coll>Config calls (NCCL 2.31; launchCompletionEvent
   2.32). Always start from NCCL_COLLCONFIG_INITIALIZER, then set fields; every rank must pass the
   same settings. See docs/api.md for what Weft does with each. */
typedef struct ncclCollConfig_v23200 {
  size_t size;            /* set by the initializer; do not change */
  unsigned int magic;     /* set by the initializer; do not change */
  unsigned int version;   /* set by the initializer; do not change */
  ncclConfigExt_t* ext;   /* vendor options, or NULL */
  int minCTAs;            /* fewest channels for this call */
  int maxCTAs;            /* most channels for this call */
  int nvlsCTAs;           /* channels for NVLink SHARP (GPU only) */
  int cgaClusterSize;     /* GPU thread-block cluster size (GPU only) */
  const char* algSelection; /* algorithms this call may use, e.g. "RING" or "TREE,^TREE_LL"; NULL: any */
  int forceAlgSelection;  /* 1: a selection that cannot be honoured is an error; 0: ignore it */
  int CTAPolicy;          /* one of NCCL_CTA_POLICY_* (GPU only) */
  uint64_t userProfilerTag; /* given to profiler plugins with the call's events; changes nothing */
  WEFT_EVENT_T launchCompletionEvent; /* NCCL 2.32: recorded once the call's kernel is launched (GPU only) */
} ncclCollConfig_t;

#define NCCL_COLLCONFIG_INITIALIZER                                                 \
  {                                                                                 \
    sizeof(ncclCollConfig_t),                         /* size */                    \
    NCCL_API_MAGIC,                                   /* magic */                   \
    NCCL_VERSION_CODE,                                /* version */                 \
    NCCL_CONFIG_UNDEF_PTR,                            /* ext */                     \
    NCCL_CONFIG_UNDEF_INT,                            /* minCTAs */                 \
    NCCL_CONFIG_UNDEF_INT,                            /* maxCTAs */                 \
    NCCL_CONFIG_UNDEF_INT,                            /* nvlsCTAs */                \
    NCCL_CONFIG_UNDEF_INT,                            /* cgaClusterSize */          \
    NCCL_CONFIG_UNDEF_PTR,                            /* algSelection */            \
    1,                                                /* forceAlgSelection */       \
    NCCL_CONFIG_UNDEF_INT,                            /* CTAPolicy */               \
    0,                                                /* userProfilerTag */         \
    NCCL_CONFIG_UNDEF_PTR,                            /* launchCompletionEvent */   \
  }

/* What ncclGroupSimulateEnd reports. Always start from NCCL_SIM_INFO_INITIALIZER. */
typedef struct ncclSimInfo_v22200 {
  size_t size;          /* set by the initializer; do not change */
  unsigned int magic;   /* set by the initializer; do not change */
  unsigned int version; /* set by the initializer; do not change */
  float estimatedTime;  /* Weft's estimate of how long the simulated group takes */
} ncclSimInfo_t;

/* Initial value for every ncclSimInfo_t. */
#define NCCL_SIM_INFO_INITIALIZER                                                   \
  {                                                                                 \
    sizeof(ncclSimInfo_t),                            /* size */                    \
    0x74685283,                                       /* magic */                   \
    NCCL_VERSION_CODE,                                /* version */                 \
    NCCL_UNDEF_FLOAT                                  /* estimatedTime */           \
  }

/* ---- Reduction operators and data types ----------------------------------------------------- */

/* Only used to size ncclRedOp_t (below) the way NCCL does. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;

typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  /* The count of built-in operators; operators made by ncclRedOpCreatePreMulSum start here. */
  ncclNumOps = 5,
  /* The largest operator value; it keeps the enum the size of an int. */
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12,
  /* [Weft] Weft's complex datatypes, outside NCCL's numbering. Programs use them by the names
   * weft/weft.h gives them as macros, weftComplex64 and weftComplex128 (so that they can test for
   * them with #ifdef); they are enumerators here so that `case weftComplex64:` in a switch over
   * ncclDataType_t is a value of the enum (GCC's -Wswitch flags any other case value). */
  weftDataTypeComplex64_ = 64,
  weftDataTypeComplex128_ = 65,
  /* [Weft] Not a datatype: it widens the enum's range of values. A C++ enum without a fixed
   * underlying type holds only the values of the smallest bit field that fits its enumerators
   * (here 0..127), and converting any other int to it, as a program passing an unknown datatype
   * value does, is undefined behaviour (UBSan and constant evaluation reject it); Weft answers such
   * a value with ncclInvalidArgument, so the value must be representable. Every NCCL value is
   * unchanged, and so is the ABI: 0x7fffffff fits an int, so the enum stays 4 bytes with the same
   * underlying type (NCCL's ncclMaxRedOp widens ncclRedOp_t the same way). A switch over
   * ncclDataType_t needs a default label, as it already did for ncclNumTypes. */
  weftDataTypeMaxValue_ = 0x7fffffff
} ncclDataType_t;

/* Where the scalar given to ncclRedOpCreatePreMulSum lives. */
typedef enum {
  ncclScalarDevice = 0,       /* in device memory, read when the collective runs */
  ncclScalarHostImmediate = 1 /* in host memory, read before the create call returns */
} ncclScalarResidence_t;

/* ---- Memory --------------------------------------------------------------------------------- */

/* Allocates size bytes suited to Weft's transports (buffer registration, windows). */
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size);

/* Frees memory from ncclMemAlloc. */
ncclResult_t ncclMemFree(void* ptr);
ncclResult_t pncclMemFree(void* ptr);

/* ---- Version and errors --------------------------------------------------------------------- */

/* Stores the library's NCCL_VERSION_CODE (23007 for 2.30.7) in *version. */
ncclResult_t ncclGetVersion(int* version);
ncclResult_t pncclGetVersion(int* version);

/* A short description of a result code. */
const char* ncclGetErrorString(ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result);

/* A human-readable message about the most recent error (comm may be NULL). */
const char* ncclGetLastError(ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm);

/* Re-reads the logging settings (NCCL_DEBUG...). Deprecated: not part of the supported API. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((deprecated("ncclResetDebugInit is not part of the supported NCCL API")))
#endif
void ncclResetDebugInit(void);
#if defined(__GNUC__) || defined(__clang__)
__attribute__((deprecated("pncclResetDebugInit is not part of the supported NCCL API")))
#endif
void pncclResetDebugInit(void);

/* ---- Communicator creation and teardown ----------------------------------------------------- */

/* Makes a fresh unique id; create it on one rank and hand it to every rank. */
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/* Sets the process-wide encryption of the sockets the library makes from now on (bootstrap and the
   Socket network): TLS 1.3 with a pre-shared key, or none. Call it before ncclGetUniqueId and
   before any communicator, with the same key in every process of the job. A NULL config turns
   encryption off. Returns ncclInvalidArgument for a config not made from the initializer, an
   unknown mode or a key shorter than 32 bytes, ncclInvalidUsage when this build has no TLS and
   ncclSystemError when OpenSSL 3 cannot be loaded; encryption is then unchanged. */
ncclResult_t ncclSetEncryption(const ncclEncryptionConfig_t* config);
ncclResult_t pncclSetEncryption(const ncclEncryptionConfig_t* config);

/* Joins communicator commId as rank (of nranks), with options from config (NULL: defaults). */
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config);

/* Joins communicator commId as rank (of nranks); every rank must call it (or use a group). */
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);

/* Creates all ndev ranks of a communicator in this process (devlist NULL: devices 0..ndev-1). */
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);

/* Like ncclCommInitRankConfig, with nId unique ids (the same list on every rank) to spread setup. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId* commIds, ncclConfig_t* config);

/* Completes all issued work and releases shared resources; then ncclCommDestroy is cheap. */
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm);

/* Frees this rank's communicator. */
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);

/* Stops all outstanding work on comm and frees it (the way out after an error). */
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);

/* Cancels comm's in-flight work so it can still be destroyed, split or shrunk (flags: 0). */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);

/* Splits comm by color, ordering by key; NCCL_SPLIT_NOCOLOR gives *newcomm = NULL. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config);

/* Makes a communicator of comm's ranks minus excludeRanksList (flags: NCCL_SHRINK_*). */
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                             ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);

/* NCCL 2.30: makes the id new ranks use to join comm through ncclCommGrow. Called on the one
   existing rank that will pass it to ncclCommGrow; each id serves one grow. */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);

/* NCCL 2.30: makes a communicator of nRanks ranks: comm's ranks (keeping their numbers) and new
   ones. Existing ranks pass comm and rank -1 (the root also passes the id from
   ncclCommGetUniqueId, the others NULL); new ranks pass comm NULL, the id and their rank. */
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                           ncclComm_t* newcomm, ncclConfig_t* config);

/* ---- Suspending a communicator's memory (NCCL 2.30) ----------------------------------------- */

/* Flag for ncclCommSuspend: release the memory the communicator can make again on resume. */
#define NCCL_SUSPEND_MEM 0x01

/* Every rank of comm calls it, with no operation in flight: releases what flags name (FIFOs and
   staging areas for NCCL_SUSPEND_MEM). comm takes no operation until ncclCommResume. */
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags);

/* Every rank of comm calls it: comm is usable again (its FIFOs are made again on first use). */
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t pncclCommResume(ncclComm_t comm);

/* What ncclCommMemStats reports. "GPU memory" is the communicator's device memory on a GPU and its
   host memory (shared-memory FIFOs, staging areas, network buffers) in host mode. */
typedef enum {
  ncclStatGpuMemSuspend = 0,   /* bytes held now that ncclCommSuspend would release */
  ncclStatGpuMemSuspended = 1, /* 1 while suspended, else 0 */
  ncclStatGpuMemPersist = 2,   /* bytes held that suspend keeps */
  ncclStatGpuMemTotal = 3      /* all bytes held */
} ncclCommMemStat_t;

ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);

/* ---- Communicator queries ------------------------------------------------------------------- */

/* Reports an asynchronous error (or ncclInProgress while non-blocking work is pending). */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);

/* Number of ranks in comm. */
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);

/* The device index comm is bound to. */
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);

/* This rank's index in comm. */
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

/* ---- Buffer registration -------------------------------------------------------------------- */

/* Registers buff for zero-copy use by comm; returns a handle for ncclCommDeregister. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);

/* Undoes ncclCommRegister. */
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);

/* Collectively registers a memory window on every rank of comm (flags: NCCL_WIN_*). */
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                     int winFlags);

/* Collectively releases a window from ncclCommWindowRegister. */
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);

/* NCCL 2.30: the buffer win was registered with, on this rank. */
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);

/* ---- Custom reduction operators ------------------------------------------------------------- */

/* Makes an operator that multiplies each input by *scalar, then sums; valid for comm and datatype. */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);

/* Releases an operator made by ncclRedOpCreatePreMulSum on comm. */
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* ---- Collectives (every rank of comm calls each one; counts are in elements) ---------------- */

/* Reduces every rank's sendbuff with op into recvbuff on rank root. */
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                         ncclRedOp_t op, int root, ncclComm_t comm, WEFT_STREAM_T stream);

/* In-place broadcast of buff from rank root (older form of ncclBroadcast). */
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       WEFT_STREAM_T stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        WEFT_STREAM_T stream);

/* Copies root's sendbuff into every rank's recvbuff. */
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           WEFT_STREAM_T stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm,
                            WEFT_STREAM_T stream);

/* Reduces every rank's sendbuff with op; every rank gets the result in recvbuff. */
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           WEFT_STREAM_T stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            WEFT_STREAM_T stream);

/* Reduces nranks*recvcount elements with op; rank i gets block i of the result. */
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               WEFT_STREAM_T stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                WEFT_STREAM_T stream);

/* Every rank gets all ranks' sendbuff, rank i's at recvbuff + i*sendcount. */
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream);

/* Block j of sendbuff goes to rank j; block i of recvbuff comes from rank i (count per block). */
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream);

/* Rank root gets every rank's sendbuff, rank i's at recvbuff + i*count. */
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, int root, ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, WEFT_STREAM_T stream);

/* Rank i gets block i (count elements) of root's sendbuff. */
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, int root, ncclComm_t comm, WEFT_STREAM_T stream);

/* The same collectives with a ncclCollConfig_t for this call (NCCL 2.31). A NULL config is the
   plain call. */
ncclResult_t ncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, ncclComm_t comm, WEFT_STREAM_T stream,
                                 const ncclCollConfig_t* config);
ncclResult_t pncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, WEFT_STREAM_T stream,
                                  const ncclCollConfig_t* config);
ncclResult_t ncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 int root, ncclComm_t comm, WEFT_STREAM_T stream, const ncclCollConfig_t* config);
ncclResult_t pncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  int root, ncclComm_t comm, WEFT_STREAM_T stream, const ncclCollConfig_t* config);
ncclResult_t ncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                              ncclRedOp_t op, int root, ncclComm_t comm, WEFT_STREAM_T stream,
                              const ncclCollConfig_t* config);
ncclResult_t pncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                               ncclRedOp_t op, int root, ncclComm_t comm, WEFT_STREAM_T stream,
                               const ncclCollConfig_t* config);
ncclResult_t ncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                 ncclComm_t comm, WEFT_STREAM_T stream, const ncclCollConfig_t* config);
ncclResult_t pncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                  ncclComm_t comm, WEFT_STREAM_T stream, const ncclCollConfig_t* config);
ncclResult_t ncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount,
                                     ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                     WEFT_STREAM_T stream, const ncclCollConfig_t* config);
ncclResult_t pncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                      WEFT_STREAM_T stream, const ncclCollConfig_t* config);
ncclResult_t ncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                ncclComm_t comm, WEFT_STREAM_T stream, const ncclCollConfig_t* config);
ncclResult_t pncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclComm_t comm, WEFT_STREAM_T stream, const ncclCollConfig_t* config);
ncclResult_t ncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                              int root, ncclComm_t comm, WEFT_STREAM_T stream, const ncclCollConfig_t* config);
ncclResult_t pncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                               int root, ncclComm_t comm, WEFT_STREAM_T stream, const ncclCollConfig_t* config);
ncclResult_t ncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                               int root, ncclComm_t comm, WEFT_STREAM_T stream, const ncclCollConfig_t* config);
ncclResult_t pncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                int root, ncclComm_t comm, WEFT_STREAM_T stream, const ncclCollConfig_t* config);

/* ---- Point to point (pair each ncclSend with the peer's ncclRecv; group concurrent ones) ----- */

/* Sends count elements of sendbuff to rank peer. */
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, WEFT_STREAM_T stream);

/* Receives count elements from rank peer into recvbuff. */
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, WEFT_STREAM_T stream);

/* ---- One-sided operations on windows (NCCL 2.30) -------------------------------------------- */

/* Writes count elements of localbuff into peer's window peerWin at byte offset peerWinOffset, then
   raises signal sigIdx of context ctx at peer; peer does not take part (flags: 0). */
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                           unsigned int flags, ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                            ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                            unsigned int flags, ncclComm_t comm, WEFT_STREAM_T stream);

/* Raises signal sigIdx of context ctx at peer, after this rank's earlier puts to it (flags: 0). */
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                        WEFT_STREAM_T stream);
ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                         WEFT_STREAM_T stream);

/* One thing ncclWaitSignal waits for: opCnt signals from peer on (sigIdx, ctx). */
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;

/* Waits until every descriptor's signals have arrived (and with them the data put before them). */
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                            WEFT_STREAM_T stream);
ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                             WEFT_STREAM_T stream);

/* ---- Groups --------------------------------------------------------------------------------- */

/* Starts a group: the calls that follow are queued, not started, until ncclGroupEnd (nestable). */
ncclResult_t ncclGroupStart(void);
ncclResult_t pncclGroupStart(void);

/* Ends a group: the queued calls (collectives, point to point, communicator setup) start together. */
ncclResult_t ncclGroupEnd(void);
ncclResult_t pncclGroupEnd(void);

/* Ends a group without running it and fills *simInfo with an estimate of its cost. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

/* ---- Parameters (NCCL 2.30): the settings the library reads, by their environment names ---- */

/* A parameter, found by name once; each read gives the value in effect. Owned by the library. */
typedef struct ncclParamHandle* ncclParamHandle_t;

/* Finds the parameter called key (e.g. "NCCL_BUFFSIZE"); ncclInvalidArgument if there is none. */
ncclResult_t ncclParamBind(ncclParamHandle_t* out, const char* key);
ncclResult_t pncclParamBind(ncclParamHandle_t* out, const char* key);

/* The parameter's value as an integer of the named width; ncclInvalidArgument when the value is
   not an integer or does not fit. */
ncclResult_t ncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t pncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t ncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t pncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t ncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t pncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t ncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t pncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t ncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t pncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t ncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t pncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t ncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t pncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t ncclParamGetU64(ncclParamHandle_t h, uint64_t* out);
ncclResult_t pncclParamGetU64(ncclParamHandle_t h, uint64_t* out);

/* The value as text; the string stays valid until this thread's next ncclParamGetStr. */
ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char** out);
ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char** out);

/* The value's bytes into out (at most maxLen): an integer or boolean parameter as an int64_t, a
   string as its text with the NUL. *len gets the length the value needs. */
ncclResult_t ncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);
ncclResult_t pncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);

/* The value of key as text, valid until this thread's next call of it; *valueLen its length. */
ncclResult_t ncclParamGetParameter(const char* key, const char** value, int* valueLen);
ncclResult_t pncclParamGetParameter(const char* key, const char** value, int* valueLen);

/* Every parameter's name (NCCL_PARAM_DUMP_ALL=1: the internal ones too), valid until this
   thread's next call of it. */
ncclResult_t ncclParamGetAllParameterKeys(const char*** table, int* tableLen);
ncclResult_t pncclParamGetAllParameterKeys(const char*** table, int* tableLen);

/* Logs every parameter with its value (at NCCL_DEBUG=INFO). */
void ncclParamDumpAll(void);
void pncclParamDumpAll(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC visibility pop
#endif

#endif /* NCCL_H_ */
