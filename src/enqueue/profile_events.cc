#include "enqueue/profile_events.h"

#include <array>
#include <cctype>
#include <cstring>
#include <string>

#include "collectives/registry.h"
#include "comm/comm.h"
#include "trace/profiler.h"

namespace weft {
namespace {

// This thread's group API event: groups are per thread, as NCCL has them.
thread_local void* tGroupApi = nullptr;

// The names NCCL gives plugins, so that a plugin written for NCCL reads Weft's events. They
// must outlive the plugin's use of them: static storage.
const char* dataTypeText(ncclDataType_t t) {
  static const char* const kNames[] = {"ncclInt8",    "ncclUint8",    "ncclInt32",      "ncclUint32",
                                       "ncclInt64",   "ncclUint64",   "ncclFloat16",    "ncclFloat32",
                                       "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return t >= 0 && static_cast<size_t>(t) < sizeof kNames / sizeof kNames[0] ? kNames[t] : "Unknown";
}

const char* algorithmText(Algorithm a) {
  // NCCL's names are upper case ("RING", "TREE"); Weft's others follow suit ("DDAFLAT").
  static const std::array<std::string, kMaxAlgorithms> kNames = [] {
    std::array<std::string, kMaxAlgorithms> names;
    for (int i = 0; i < algorithmCount() && i < kMaxAlgorithms; ++i) {
      std::string n = algorithmName(Algorithm(i));
      for (char& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      names[i] = n;
    }
    return names;
  }();
  const int i = static_cast<int>(a);
  return i < kMaxAlgorithms ? kNames[i].c_str() : "UNKNOWN";
}

const char* protocolText(Protocol p) {
  static const char* const kNames[] = {"LL", "LL128", "SIMPLE"};
  const int i = static_cast<int>(p);
  return i >= 0 && i < 3 ? kNames[i] : "UNKNOWN";
}

bool isPointToPoint(const Task& t) {
  return t.kind == CollKind::kSend || t.kind == CollKind::kRecv || t.kind == CollKind::kCopy;
}

}  // namespace

void profileApiCall(Task& t, int depth) {
  if (!profiler::active() || t.comm->profilerContext == nullptr) return;
  if (tGroupApi == nullptr) {
    ncclProfilerEventDescr_t d{};
    d.type = ncclProfileGroupApi;
    d.groupApi.groupDepth = depth + 1;  // NCCL's count: 1 = the implicit group of a lone call
    tGroupApi = profiler::start(t.comm->profilerContext, &d);
    profiler::record(tGroupApi, ncclProfilerGroupStartApiStop);
  }
  ncclProfilerEventDescr_t d{};
  d.parentObj = tGroupApi;
  if (isPointToPoint(t)) {
    d.type = ncclProfileP2pApi;
    d.p2pApi.func = collName(t.kind);
    d.p2pApi.count = t.count;
    d.p2pApi.datatype = dataTypeText(t.dtype);
    d.p2pApi.stream = t.stream;
  } else {
    d.type = ncclProfileCollApi;
    d.collApi.func = collName(t.kind);
    d.collApi.count = t.count;
    d.collApi.datatype = dataTypeText(t.dtype);
    d.collApi.root = t.root;
    d.collApi.stream = t.stream;
  }
  // Started and stopped within the call, as NCCL does; the operation event names it as its parent.
  t.profilerApi = profiler::start(t.comm->profilerContext, &d);
  profiler::stop(t.profilerApi);
}

void profileGroupEndStarts() {
  if (profiler::active()) profiler::record(tGroupApi, ncclProfilerGroupEndApiStart);
}

void profileGroupApiDone() {
  if (!profiler::active()) return;
  profiler::stop(tGroupApi);
  tGroupApi = nullptr;
}

void profileRunStarts(const std::vector<Task>& tasks, ProfiledRun* run) {
  if (!profiler::active() || tasks.empty() || tasks.front().comm->profilerContext == nullptr) return;
  run->ops.assign(tasks.size(), nullptr);
  ncclProfilerEventDescr_t g{};
  g.type = ncclProfileGroup;
  g.rank = tasks.front().comm->rank;
  run->group = profiler::start(tasks.front().comm->profilerContext, &g);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    if (t.comm->profilerContext == nullptr) continue;
    ncclProfilerEventDescr_t d{};
    d.rank = t.comm->rank;
    // v5 and later hang an operation under its API call; v4, which has no API events, under the group.
    d.parentObj = profiler::version() >= 5 ? t.profilerApi : run->group;
    if (isPointToPoint(t)) {
      d.type = ncclProfileP2p;
      d.p2p.func = collName(t.kind);
      d.p2p.buff = t.kind == CollKind::kRecv ? t.recvbuff : const_cast<void*>(t.sendbuff);
      d.p2p.datatype = dataTypeText(t.dtype);
      d.p2p.count = t.count;
      d.p2p.peer = t.root;
      d.p2p.nChannels = static_cast<uint8_t>(t.nChannels);
      d.p2p.parentGroup = run->group;
    } else {
      d.type = ncclProfileColl;
      d.coll.seqNumber = t.seq;
      d.coll.func = collName(t.kind);
      d.coll.sendBuff = t.sendbuff;
      d.coll.recvBuff = t.recvbuff;
      d.coll.count = t.count;
      d.coll.root = t.root;
      d.coll.datatype = dataTypeText(t.dtype);
      d.coll.nChannels = static_cast<uint8_t>(t.nChannels);
      d.coll.algo = algorithmText(t.algorithm);
      d.coll.proto = protocolText(t.protocol);
      d.coll.parentGroup = run->group;
    }
    run->ops[i] = profiler::start(t.comm->profilerContext, &d);
  }
}

void profileRunDone(ProfiledRun* run) {
  for (void*& h : run->ops) {
    profiler::stop(h);
    h = nullptr;
  }
  profiler::stop(run->group);
  run->group = nullptr;
}

}  // namespace weft
