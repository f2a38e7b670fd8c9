#include "enqueue/profile_events.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <string>

#include "collectives/registry.h"
#include "comm/comm.h"
#include "comm/connect.h"
#include "math/reduce_host.h"
#include "trace/profiler.h"
#include "transports/net/proxy_profile.h"

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

// The task's key among its communicator's operations, as the proxy reads it from stamps.
uint64_t proxyKey(const Task& t) {
  const auto op = static_cast<uint32_t>(t.opNum);
  if (t.kind == CollKind::kSend) return net::opKey(net::OpSpace::kSend, t.root, op);
  if (t.kind == CollKind::kRecv) return net::opKey(net::OpSpace::kRecv, t.root, op);
  return net::opKey(net::OpSpace::kColl, 0, op);
}

// How many messages task `index`'s program moves over each network link: the executors cut a
// step into pieces of at most one slot (comm->slotBytes), one message per piece and peer.
std::vector<net::LinkTraffic> networkTraffic(const Program& prog, uint32_t index, const Task& t) {
  std::vector<net::LinkTraffic> out;
  ncclComm* comm = t.comm;
  const size_t perPiece = std::max<size_t>(1, comm->slotBytes / dataTypeSize(t.dtype));
  auto add = [&](const Sequence& s, int peer, bool isSend, size_t count) {
    if (peer < 0 || comm->network == nullptr || !usesNetwork(comm, peer)) return;
    const int messages = static_cast<int>((count + perPiece - 1) / perPiece);
    for (net::LinkTraffic& l : out)
      if (l.lane == static_cast<int>(s.lane) && l.channel == s.channel && l.peer == peer && l.isSend == isSend) {
        l.messages += messages;
        return;
      }
    out.push_back(net::LinkTraffic{static_cast<int>(s.lane), s.channel, peer, isSend, messages});
  };
  for (const Sequence& s : prog.sequences) {
    if (s.task != index || s.lane == Lane::kDirect) continue;
    for (uint32_t k = 0; k < s.nSteps; ++k) {
      const Step& st = prog.steps[s.firstStep + k];
      if (st.count == 0) continue;
      for (const bool isSend : {true, false}) {
        if (!(isSend ? stepSends(st.op) : stepReceives(st.op))) continue;
        if (!s.multiPeer()) {
          add(s, isSend ? s.sendPeer : s.recvPeer, isSend, st.count);
          continue;
        }
        const int n = isSend ? s.nSendPeers : s.nRecvPeers;
        const unsigned mask = isSend ? st.sendMask : st.recvMask;
        for (int i = 0; i < n; ++i)
          if (mask & (1u << i)) add(s, isSend ? s.sendPeers[i] : s.recvPeers[i], isSend, st.count);
      }
    }
  }
  return out;
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
    d.p2pApi.userTag = t.userProfilerTag;
  } else {
    d.type = ncclProfileCollApi;
    d.collApi.func = collName(t.kind);
    d.collApi.count = t.count;
    d.collApi.datatype = dataTypeText(t.dtype);
    d.collApi.root = t.root;
    d.collApi.stream = t.stream;
    d.collApi.userTag = t.userProfilerTag;  // a nccl<Coll>Config call's ncclCollConfig_t tag, else 0
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

void profileRunStarts(std::vector<Task>& tasks, const Program& prog, ProfiledRun* run) {
  if (!profiler::active() || tasks.empty() || tasks.front().comm->profilerContext == nullptr) return;
  run->proxyKeys.assign(tasks.size(), ProfiledRun::kNotProxied);
  const bool proxied = profiler::wants(ncclProfileProxyOp);
  ncclProfilerEventDescr_t g{};
  g.type = ncclProfileGroup;
  g.rank = tasks.front().comm->rank;
  run->group = profiler::start(tasks.front().comm->profilerContext, &g);
  for (size_t i = 0; i < tasks.size(); ++i) {
    Task& t = tasks[i];
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
      d.p2p.userTag = t.userProfilerTag;
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
      d.coll.userTag = t.userProfilerTag;
    }
    t.profilerOp = profiler::start(t.comm->profilerContext, &d);
    std::vector<net::LinkTraffic> traffic;
    if (proxied) traffic = networkTraffic(prog, static_cast<uint32_t>(i), t);
    if (!traffic.empty()) {
      run->proxyKeys[i] = proxyKey(t);
      t.comm->proxyProfile->opStarted(run->proxyKeys[i], t.profilerOp, std::move(traffic));
    }
  }
}

void profileRunDone(const std::vector<Task>& tasks, ProfiledRun* run) {
  for (size_t i = 0; i < run->proxyKeys.size(); ++i) {
    if (run->proxyKeys[i] != ProfiledRun::kNotProxied)
      tasks[i].comm->proxyProfile->opFinished(run->proxyKeys[i]);
    else
      profiler::stop(tasks[i].profilerOp);
  }
  run->proxyKeys.clear();  // a later run that is not profiled must find nothing to finish here
  profiler::stop(run->group);
  run->group = nullptr;
}

}  // namespace weft
