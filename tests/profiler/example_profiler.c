/* A profiler plugin for the tests (tests/profiler/check_profiler.py), built once per ABI version
 * (EXAMPLE_PROFILER_ABI = 7 down to 1). It writes every call it gets to
 * EXAMPLE_PROFILER_LOG.<pid>, one line each, so a test can check the events' order, parents and
 * content. EXAMPLE_PROFILER_MASK (decimal) is the activation mask it sets at its first init. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "trace/profiler_abi.h"

static pthread_mutex_t gLock = PTHREAD_MUTEX_INITIALIZER;
static FILE* gLog;
static int gNextId;
static int gInits;

struct Event {
  int id;
  uint64_t type;
};

/* Every event ever started, kept until the process ends: a child's event may name a parent that
 * has stopped (docs/trace.md), so none is freed, and the list keeps them reachable for leak checks. */
static struct Event** gEvents;
static size_t gNEvents, gCapEvents;

/* Called with gLock held. */
static struct Event* newEvent(void) {
  if (gNEvents == gCapEvents) {
    gCapEvents = gCapEvents == 0 ? 256 : 2 * gCapEvents;
    gEvents = realloc(gEvents, gCapEvents * sizeof(struct Event*));
  }
  struct Event* e = malloc(sizeof *e);
  gEvents[gNEvents++] = e;
  return e;
}

static FILE* logFile(void) {
  if (gLog == NULL) {
    const char* prefix = getenv("EXAMPLE_PROFILER_LOG");
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", prefix != NULL ? prefix : "example_profiler", (int)getpid());
    gLog = fopen(path, "w");
  }
  return gLog;
}

static int idOf(void* handle) { return handle == NULL ? 0 : ((struct Event*)handle)->id; }
static const char* text(const char* s) { return s != NULL ? s : "-"; }

static ncclResult_t commonInit(void** context, int* mask, const char* name, uint64_t id, int nranks, int rank) {
  pthread_mutex_lock(&gLock);
  if (gInits++ == 0) {
    const char* m = getenv("EXAMPLE_PROFILER_MASK");
    *mask = m != NULL ? atoi(m) : 0;
  }
  struct Event* ctx = malloc(sizeof *ctx);
  ctx->id = ++gNextId;
  *context = ctx;
  fprintf(logFile(), "init %d comm=%016" PRIx64 " name=%s nranks=%d rank=%d abi=%d\n", ctx->id, id, text(name), nranks,
          rank, EXAMPLE_PROFILER_ABI);
  fflush(gLog);
  pthread_mutex_unlock(&gLock);
  return ncclSuccess;
}

#if EXAMPLE_PROFILER_ABI <= 3
/* v1 to v3: init knows no communicator; the operation events carry its hash instead. */
static ncclResult_t initLegacy(void** context, int* mask) { return commonInit(context, mask, NULL, 0, -1, -1); }

#elif EXAMPLE_PROFILER_ABI >= 5
static ncclResult_t initV5(void** context, uint64_t commId, int* mask, const char* name, int nNodes, int nranks,
                           int rank, ncclDebugLogger_t logfn) {
  (void)nNodes;
  (void)logfn;
  return commonInit(context, mask, name, commId, nranks, rank);
}

#else
static ncclResult_t initV4(void** context, int* mask, const char* name, uint64_t commHash, int nNodes, int nranks,
                           int rank, ncclDebugLogger_t logfn) {
  (void)nNodes;
  (void)logfn;
  return commonInit(context, mask, name, commHash, nranks, rank);
}
#endif

#if EXAMPLE_PROFILER_ABI <= 3
#define LEGACY_DESCR_(v) ncclProfilerEventDescr_v##v##_t
#define LEGACY_DESCR(v) LEGACY_DESCR_(v)
typedef LEGACY_DESCR(EXAMPLE_PROFILER_ABI) LegacyDescr;

/* v1 gives enum values where later versions give names: logged as numbers (func=4). */
#if EXAMPLE_PROFILER_ABI == 1
#define LEGACY_NAME(x) fprintf(f, "%d", (int)(x))
#else
#define LEGACY_NAME(x) fprintf(f, "%s", text(x))
#endif

static ncclResult_t startLegacy(void* context, void** handle, LegacyDescr* d) {
  pthread_mutex_lock(&gLock);
  struct Event* e = newEvent();
  e->id = ++gNextId;
  *handle = e;
  FILE* f = logFile();
  e->type = d->type;
  fprintf(f, "start %d ctx=%d type=%d parent=%d rank=%d", e->id, idOf(context), (int)d->type, idOf(d->parentObj),
          d->rank);
  if (d->type == ncclProfileColl) {
    fprintf(f, " func=");
    LEGACY_NAME(d->coll.func);
    fprintf(f, " count=%zu datatype=", d->coll.count);
    LEGACY_NAME(d->coll.datatype);
    fprintf(f, " root=%d seq=%" PRIu64 " algo=", d->coll.root, d->coll.seqNumber);
    LEGACY_NAME(d->coll.algo);
    fprintf(f, " proto=");
    LEGACY_NAME(d->coll.proto);
    fprintf(f, " channels=%d comm=%016" PRIx64, d->coll.nMaxChannels, d->coll.commHash);
  }
  if (d->type == ncclProfileP2p) {
    fprintf(f, " func=");
    LEGACY_NAME(d->p2p.func);
    fprintf(f, " count=%zu datatype=", d->p2p.count);
    LEGACY_NAME(d->p2p.datatype);
    fprintf(f, " peer=%d channels=1 comm=%016" PRIx64, d->p2p.peer, d->p2p.commHash);
  }
  if (d->type == ncclProfileProxyOp)
    fprintf(f, " channel=%d peer=%d steps=%d chunk=%d send=%d pid=%d", d->proxyOp.channelId, d->proxyOp.peer,
            d->proxyOp.nSteps, d->proxyOp.chunkSize, d->proxyOp.isSend, (int)d->proxyOp.pid);
  if (d->type == ncclProfileProxyStep) fprintf(f, " step=%d", d->proxyStep.step);
#if EXAMPLE_PROFILER_ABI == 3
  if (d->type == ncclProfileKernelCh) fprintf(f, " channel=%d", d->kernelCh.channelId);
  if (d->type == ncclProfileNetPlugin)
    fprintf(f, " plugin=%" PRId64 " data=%s", d->netPlugin.id,
            d->netPlugin.id == 0x57454654 ? text((const char*)d->netPlugin.data) : "?");
#endif
  fprintf(f, "\n");
  fflush(f);
  pthread_mutex_unlock(&gLock);
  return ncclSuccess;
}

static ncclResult_t recordLegacy(void* handle, int state, void* args) {
  (void)args;
  pthread_mutex_lock(&gLock);
  fprintf(logFile(), "state %d %d\n", idOf(handle), state);
  fflush(gLog);
  pthread_mutex_unlock(&gLock);
  return ncclSuccess;
}
#else
static ncclResult_t startEvent(void* context, void** handle, ncclProfilerEventDescr_t* d) {
  pthread_mutex_lock(&gLock);
  struct Event* e = newEvent();
  e->id = ++gNextId;
  *handle = e;
  /* A v4 plugin reads the type as one byte. */
  const uint64_t type = EXAMPLE_PROFILER_ABI >= 5 ? d->type : *(const uint8_t*)&d->type;
  FILE* f = logFile();
  fprintf(f, "start %d ctx=%d type=%" PRIu64 " parent=%d rank=%d", e->id, idOf(context), type, idOf(d->parentObj),
          d->rank);
  if (type == ncclProfileGroupApi) fprintf(f, " depth=%d", d->groupApi.groupDepth);
  if (type == ncclProfileCollApi)
    fprintf(f, " func=%s count=%zu datatype=%s root=%d", text(d->collApi.func), d->collApi.count,
            text(d->collApi.datatype), d->collApi.root);
  if (type == ncclProfileP2pApi)
    fprintf(f, " func=%s count=%zu datatype=%s", text(d->p2pApi.func), d->p2pApi.count, text(d->p2pApi.datatype));
#if EXAMPLE_PROFILER_ABI >= 7
  /* The tag of a nccl<Coll>Config call (0 otherwise). */
  if (type == ncclProfileCollApi) fprintf(f, " tag=%" PRIx64, d->collApi.userTag);
  if (type == ncclProfileP2pApi) fprintf(f, " tag=%" PRIx64, d->p2pApi.userTag);
  if (type == ncclProfileColl) fprintf(f, " tag=%" PRIx64, d->coll.userTag);
  if (type == ncclProfileP2p) fprintf(f, " tag=%" PRIx64, d->p2p.userTag);
#endif
  if (type == ncclProfileColl) {
    fprintf(f, " func=%s count=%zu datatype=%s root=%d seq=%" PRIu64 " algo=%s proto=%s channels=%d",
            text(d->coll.func), d->coll.count, text(d->coll.datatype), d->coll.root, d->coll.seqNumber,
            text(d->coll.algo), text(d->coll.proto), d->coll.nChannels);
#if EXAMPLE_PROFILER_ABI >= 5
    fprintf(f, " group=%d", idOf(d->coll.parentGroup));
#endif
  }
  if (type == ncclProfileP2p) {
    fprintf(f, " func=%s count=%zu datatype=%s peer=%d channels=%d", text(d->p2p.func), d->p2p.count,
            text(d->p2p.datatype), d->p2p.peer, d->p2p.nChannels);
#if EXAMPLE_PROFILER_ABI >= 5
    fprintf(f, " group=%d", idOf(d->p2p.parentGroup));
#endif
  }
  if (type == ncclProfileProxyOp)
    fprintf(f, " channel=%d peer=%d steps=%d chunk=%d send=%d pid=%d", d->proxyOp.channelId, d->proxyOp.peer,
            d->proxyOp.nSteps, d->proxyOp.chunkSize, d->proxyOp.isSend, (int)d->proxyOp.pid);
  if (type == ncclProfileProxyStep) fprintf(f, " step=%d", d->proxyStep.step);
  if (type == ncclProfileKernelCh) fprintf(f, " channel=%d timer=%" PRIu64, d->kernelCh.channelId, d->kernelCh.pTimer);
#if EXAMPLE_PROFILER_ABI >= 7
  if (type == ncclProfileKernelPhase)
    fprintf(f, " channel=%d phase=%d name=%s timer=%" PRIu64, d->kernelPhase.channelId, d->kernelPhase.phaseId,
            text(d->kernelPhase.phaseName), d->kernelPhase.pTimer);
#endif
  /* The example network plugin's events carry a text (tests/net/example_net.cc). */
  if (type == ncclProfileNetPlugin)
    fprintf(f, " plugin=%" PRId64 " data=%s", d->netPlugin.id,
            d->netPlugin.id == 0x57454654 ? text((const char*)d->netPlugin.data) : "?");
  e->type = type;
  fprintf(f, "\n");
  fflush(f);
  pthread_mutex_unlock(&gLock);
  return ncclSuccess;
}

#endif

static ncclResult_t stopEvent(void* handle) {
  pthread_mutex_lock(&gLock);
  fprintf(logFile(), "stop %d\n", idOf(handle));
  fflush(gLog);
  pthread_mutex_unlock(&gLock);
  return ncclSuccess;
}

#if EXAMPLE_PROFILER_ABI >= 4
static ncclResult_t recordEventState(void* handle, ncclProfilerEventState_t state, ncclProfilerEventStateArgs_t* args) {
  pthread_mutex_lock(&gLock);
  const struct Event* e = handle;
  if (e != NULL && e->type == ncclProfileProxyStep)
    fprintf(logFile(), "state %d %d size=%zu\n", idOf(handle), (int)state, args->proxyStep.transSize);
  else if (e != NULL && (e->type == ncclProfileKernelCh || e->type == ncclProfileKernelPhase))
    fprintf(logFile(), "state %d %d timer=%" PRIu64 "\n", idOf(handle), (int)state, args->kernelCh.pTimer);
  else if (e != NULL && e->type == ncclProfileNetPlugin)
    fprintf(logFile(), "state %d %d data=%s\n", idOf(handle), (int)state, text((const char*)args->netPlugin.data));
  else
    fprintf(logFile(), "state %d %d\n", idOf(handle), (int)state);
  fflush(gLog);
  pthread_mutex_unlock(&gLock);
  return ncclSuccess;
}

#endif

static ncclResult_t finalize(void* context) {
  pthread_mutex_lock(&gLock);
  fprintf(logFile(), "finalize %d\n", idOf(context));
  fflush(gLog);
  pthread_mutex_unlock(&gLock);
  free(context);
  return ncclSuccess;
}

#define EXAMPLE_SYMBOL_(v) ncclProfiler_v##v
#define EXAMPLE_SYMBOL(v) EXAMPLE_SYMBOL_(v)
#if EXAMPLE_PROFILER_ABI <= 3
#define LEGACY_TABLE_(v) ncclProfiler_v##v##_t
#define LEGACY_TABLE(v) LEGACY_TABLE_(v)
__attribute__((visibility("default"))) const LEGACY_TABLE(EXAMPLE_PROFILER_ABI) EXAMPLE_SYMBOL(EXAMPLE_PROFILER_ABI) = {
    "weft-example-profiler", initLegacy, startLegacy, stopEvent, recordLegacy, finalize};
#elif EXAMPLE_PROFILER_ABI >= 5
__attribute__((visibility("default")))
const ncclProfiler_v5_t EXAMPLE_SYMBOL(EXAMPLE_PROFILER_ABI) = {"weft-example-profiler", initV5,  startEvent, stopEvent,
                                                                recordEventState,        finalize};
#else
__attribute__((visibility("default")))
const ncclProfiler_v4_t EXAMPLE_SYMBOL(EXAMPLE_PROFILER_ABI) = {"weft-example-profiler", initV4,  startEvent, stopEvent,
                                                                recordEventState,        finalize};
#endif
