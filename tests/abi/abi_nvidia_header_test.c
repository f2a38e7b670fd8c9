/* A program written against NVIDIA's own nccl.h (the build points the include path there, not at
 * Weft's include/) and linked against Weft's libnccl.so.2: the binary-compatibility test. It runs
 * in host mode (WEFT_DEVICE=host), so every buffer is ordinary host memory and every stream is
 * NULL; with a NULL stream in host mode, an operation has completed when its call (or the
 * ncclGroupEnd that ends its group) returns.
 *
 * Two ranks live in this one process (ncclCommInitAll), so every collective is issued for both
 * communicators inside one group. Prints "abi test: N passed, M failed"; exits 0 only if M is 0. */
#define _GNU_SOURCE 1
#include <nccl.h>

/* The build says which header this copy must see; WEFT_STREAM_T exists only in Weft's. */
#if defined(WEFT_ABI_EXPECT_NVIDIA_HEADER) && defined(WEFT_STREAM_T)
#error "compiled against Weft's nccl.h, but NVIDIA's was expected: check the include path"
#endif
#if defined(WEFT_ABI_EXPECT_WEFT_HEADER) && !defined(WEFT_STREAM_T)
#error "compiled against another nccl.h, but Weft's was expected: check the include path"
#endif

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NRANKS 2
#define COUNT 1000

static int g_passed = 0;
static int g_failed = 0;

static void check(int ok, const char* what) {
  if (ok) {
    ++g_passed;
  } else {
    ++g_failed;
    fprintf(stderr, "abi test: FAILED: %s\n", what);
  }
}

/* Checks a call's result; on failure prints NCCL's error string and last-error message. */
static int check_call(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) {
    const char* last = ncclGetLastError(NULL);
    ++g_failed;
    fprintf(stderr, "abi test: FAILED: %s returned %d (%s)%s%s\n", call, (int)r,
            ncclGetErrorString(r), last && *last ? ": " : "", last ? last : "");
    return 0;
  }
  ++g_passed;
  return 1;
}
#define CALL(x) check_call((x), #x)

static int finish(void) {
  printf("abi test: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 && g_passed > 0 ? 0 : 1;
}

int main(void) {
  ncclComm_t comms[NRANKS] = {NULL, NULL};
  ncclUniqueId id;
  float* send[NRANKS];
  float* recv[NRANKS];
  float* gathered[NRANKS];
  const cudaStream_t stream = (cudaStream_t)0;
  int version = 0;
  int r, i;
  size_t k;

  /* The header is NVIDIA's: its numbers are what this binary was compiled with. */
  check(NCCL_VERSION_CODE >= 22809, "NVIDIA's nccl.h is 2.28.9 or newer");

  /* Make sure the library that got loaded is Weft, not NVIDIA's libnccl.so.2 from the system. */
  {
    const char* (*weftVersion)(void) = NULL;
    Dl_info info;
    void* sym = dlsym(RTLD_DEFAULT, "weftGetVersionString");
    memcpy(&weftVersion, &sym, sizeof(sym));
    if (dladdr((void*)&ncclGetVersion, &info) && info.dli_fname)
      printf("abi test: ncclGetVersion comes from %s\n", info.dli_fname);
    check(weftVersion != NULL, "the loaded libnccl.so.2 is Weft (exports weftGetVersionString)");
    if (weftVersion == NULL) {
      fprintf(stderr, "abi test: not testing a library that is not Weft\n");
      return finish();
    }
    printf("abi test: library: %s\n", weftVersion());
  }

  /* Version and error strings. */
  if (CALL(ncclGetVersion(&version))) {
    printf("abi test: ncclGetVersion = %d\n", version);
    check(version >= 22809, "ncclGetVersion reports 22809 or newer");
  }
  for (r = 0; r < (int)ncclNumResults; ++r) {
    const char* s = ncclGetErrorString((ncclResult_t)r);
    check(s != NULL && s[0] != '\0', "ncclGetErrorString gives a non-empty string for each result");
  }
  check(strcmp(ncclGetErrorString(ncclSuccess), ncclGetErrorString(ncclInvalidArgument)) != 0,
        "ncclGetErrorString distinguishes results");
  check(ncclGetErrorString((ncclResult_t)1234) != NULL, "ncclGetErrorString accepts unknown codes");

  /* A unique id: 128 bytes, not all zero. */
  memset(&id, 0, sizeof(id));
  if (CALL(ncclGetUniqueId(&id))) {
    int nonzero = 0;
    for (k = 0; k < sizeof(id.internal); ++k) nonzero |= id.internal[k] != 0;
    check(nonzero, "ncclGetUniqueId fills the id");
  }

  /* Two ranks in this process. */
  if (!CALL(ncclCommInitAll(comms, NRANKS, NULL))) return finish();
  for (r = 0; r < NRANKS; ++r) {
    int count = -1, rank = -1;
    ncclResult_t async = ncclInternalError;
    if (CALL(ncclCommCount(comms[r], &count))) check(count == NRANKS, "ncclCommCount is 2");
    if (CALL(ncclCommUserRank(comms[r], &rank)))
      check(rank == r, "ncclCommUserRank follows array order");
    if (CALL(ncclCommGetAsyncError(comms[r], &async)))
      check(async == ncclSuccess, "no async error");
  }

  for (r = 0; r < NRANKS; ++r) {
    send[r] = (float*)malloc(COUNT * sizeof(float));
    recv[r] = (float*)malloc(COUNT * sizeof(float));
    gathered[r] = (float*)malloc(NRANKS * COUNT * sizeof(float));
    if (!send[r] || !recv[r] || !gathered[r]) {
      fprintf(stderr, "abi test: out of memory\n");
      return 1;
    }
  }

  /* AllReduce, float sum: rank r contributes (r+1)*i + 0.5 (exact in float). */
  for (r = 0; r < NRANKS; ++r)
    for (i = 0; i < COUNT; ++i) {
      send[r][i] = (float)((r + 1) * i) + 0.5f;
      recv[r][i] = -7.0f;
    }
  CALL(ncclGroupStart());
  for (r = 0; r < NRANKS; ++r)
    CALL(ncclAllReduce(send[r], recv[r], COUNT, ncclFloat, ncclSum, comms[r], stream));
  CALL(ncclGroupEnd());
  for (r = 0; r < NRANKS; ++r) {
    int bad = 0;
    for (i = 0; i < COUNT; ++i) bad += recv[r][i] != (float)(3 * i) + 1.0f;
    check(bad == 0, "ncclAllReduce float sum result");
    if (bad)
      fprintf(stderr, "abi test: rank %d: %d wrong elements, [1] = %g\n", r, bad, recv[r][1]);
  }

  /* Broadcast from rank 1, out of place. */
  for (r = 0; r < NRANKS; ++r)
    for (i = 0; i < COUNT; ++i) {
      send[r][i] = (float)(1000 * r + i);
      recv[r][i] = -7.0f;
    }
  CALL(ncclGroupStart());
  for (r = 0; r < NRANKS; ++r)
    CALL(ncclBroadcast(send[r], recv[r], COUNT, ncclFloat, 1, comms[r], stream));
  CALL(ncclGroupEnd());
  for (r = 0; r < NRANKS; ++r) {
    int bad = 0;
    for (i = 0; i < COUNT; ++i) bad += recv[r][i] != (float)(1000 + i);
    check(bad == 0, "ncclBroadcast result (root 1)");
    if (bad)
      fprintf(stderr, "abi test: rank %d: %d wrong elements, [0] = %g\n", r, bad, recv[r][0]);
  }

  /* AllGather: rank r's block lands at r*COUNT on every rank. */
  for (r = 0; r < NRANKS; ++r) {
    for (i = 0; i < COUNT; ++i) send[r][i] = (float)(r * 10000 + i);
    for (i = 0; i < NRANKS * COUNT; ++i) gathered[r][i] = -7.0f;
  }
  CALL(ncclGroupStart());
  for (r = 0; r < NRANKS; ++r)
    CALL(ncclAllGather(send[r], gathered[r], COUNT, ncclFloat, comms[r], stream));
  CALL(ncclGroupEnd());
  for (r = 0; r < NRANKS; ++r) {
    int bad = 0, src;
    for (src = 0; src < NRANKS; ++src)
      for (i = 0; i < COUNT; ++i) bad += gathered[r][src * COUNT + i] != (float)(src * 10000 + i);
    check(bad == 0, "ncclAllGather result");
    if (bad) fprintf(stderr, "abi test: rank %d: %d wrong elements\n", r, bad);
  }

  for (r = 0; r < NRANKS; ++r) {
    ncclResult_t async = ncclInternalError;
    if (CALL(ncclCommGetAsyncError(comms[r], &async)))
      check(async == ncclSuccess, "no async error");
  }
  for (r = 0; r < NRANKS; ++r) CALL(ncclCommDestroy(comms[r]));
  for (r = 0; r < NRANKS; ++r) {
    free(send[r]);
    free(recv[r]);
    free(gathered[r]);
  }
  return finish();
}
