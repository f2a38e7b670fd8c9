#include "transports/net/proxy_profile.h"

#include <unistd.h>

#include "trace/profiler.h"

namespace weft::net {

void ProxyProfile::attach(void* context, int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  rank_ = rank;
  context_.store(context, std::memory_order_release);
}

void ProxyProfile::detach() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!on()) return;
  stopAll();
  context_.store(nullptr, std::memory_order_release);
}

// Children before parents: steps, then ProxyOps, then the operations.
void ProxyProfile::stopAll() {
  for (auto& l : links_) stopLink(l.get());
  for (auto& [key, rec] : ops_) profiler::stop(rec.handle);
  ops_.clear();
  profiler::stop(ctrl_);
  ctrl_ = nullptr;
  ctrlState_ = -1;
}

void ProxyProfile::proxyState(int state) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!on()) return;
  if (ctrl_ == nullptr) {
    ncclProfilerEventDescr_t d{};
    d.type = ncclProfileProxyCtrl;
    d.rank = rank_;
    ctrl_ = profiler::start(context_.load(std::memory_order_relaxed), &d);
    if (ctrl_ == nullptr) return;  // the plugin does not want it
  }
  if (state == ctrlState_) return;
  ctrlState_ = state;
  profiler::record(ctrl_, static_cast<ncclProfilerEventState_t>(state), nullptr);
}

// Stops the link's open steps and ProxyOps (their operations stay open for the caller to settle).
void ProxyProfile::stopLink(Link* l) {
  for (StepRec& s : l->steps) profiler::stop(s.handle);
  l->steps.clear();
  l->early.clear();
  for (auto& op : l->ops)
    if (!op->stopped) {
      op->stopped = true;
      profiler::stop(op->handle);
      auto it = ops_.find(op->key);
      if (it != ops_.end()) --it->second.openProxyOps;
    }
  l->ops.clear();
}

void ProxyProfile::dropLink(Link* l) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<uint64_t> keys;
  for (auto& op : l->ops)
    if (!op->stopped) keys.push_back(op->key);
  stopLink(l);
  l->dropped = true;
  for (uint64_t key : keys) settle(key);
}

void ProxyProfile::opStarted(uint64_t key, void* handle, std::vector<LinkTraffic> traffic) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!on()) {
    profiler::stop(handle);
    return;
  }
  OpRecord& rec = ops_[key];
  rec.handle = handle;
  rec.pendingSends = 0;
  for (const LinkTraffic& t : traffic)
    if (t.isSend) rec.pendingSends += t.messages;
  rec.traffic = std::move(traffic);
  for (auto& l : links_) {
    // In arrival order, so that step numbers follow message numbers.
    for (auto it = l->early.begin(); it != l->early.end();) {
      if (it->key != key || l->dropped) {
        ++it;
        continue;
      }
      if (ProxyOpRec* op = proxyOpFor(l.get(), key))
        startStep(l.get(), op, it->msg, it->bytes, ncclProfilerProxyStepRecvGPUWait);
      it = l->early.erase(it);
    }
  }
}

void ProxyProfile::opFinished(uint64_t key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ops_.find(key);
  if (it == ops_.end()) return;
  it->second.executorDone = true;
  for (auto& l : links_)
    for (auto& op : l->ops)
      if (op->key == key) maybeStopProxyOp(l.get(), op.get());
  settle(key);
}

// The operation's event stops once the executor is done, no ProxyOp under it is open and no
// message it sends is still to come.
void ProxyProfile::settle(uint64_t key) {
  auto it = ops_.find(key);
  if (it == ops_.end()) return;
  const OpRecord& rec = it->second;
  if (!rec.executorDone || rec.openProxyOps > 0 || rec.pendingSends > 0) return;
  profiler::stop(rec.handle);
  ops_.erase(it);
}

ProxyProfile::Link* ProxyProfile::addLink(int lane, int channel, int peer, bool isSend, int chunkBytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto l = std::make_unique<Link>();
  l->lane = lane;
  l->channel = channel;
  l->peer = peer;
  l->isSend = isSend;
  l->chunkBytes = chunkBytes;
  links_.push_back(std::move(l));
  return links_.back().get();
}

// The link's open ProxyOp for the operation `key`, started now if the operation has none here
// (null when the operation was not registered: it ran before the plugin, or without events).
ProxyProfile::ProxyOpRec* ProxyProfile::proxyOpFor(Link* l, uint64_t key) {
  if (!l->ops.empty()) {
    ProxyOpRec* last = l->ops.back().get();
    if (last->key == key && !last->stopped && (last->expected == 0 || last->started < last->expected)) return last;
  }
  auto it = ops_.find(key);
  if (it == ops_.end()) return nullptr;
  OpRecord& rec = it->second;
  // Messages of one link arrive in issue order: an earlier operation's traffic here is over.
  for (auto& op : l->ops) {
    op->superseded = true;
    maybeStopProxyOp(l, op.get());
  }
  auto op = std::make_unique<ProxyOpRec>();
  op->key = key;
  for (const LinkTraffic& t : rec.traffic)
    if (t.lane == l->lane && t.channel == l->channel && t.peer == l->peer && t.isSend == l->isSend)
      op->expected = t.messages;
  ncclProfilerEventDescr_t d{};
  d.type = ncclProfileProxyOp;
  d.parentObj = rec.handle;
  d.rank = rank_;
  d.proxyOp.pid = getpid();
  d.proxyOp.channelId = static_cast<uint8_t>(l->channel);
  d.proxyOp.peer = l->peer;
  d.proxyOp.nSteps = op->expected;
  d.proxyOp.chunkSize = l->chunkBytes;
  d.proxyOp.isSend = l->isSend ? 1 : 0;
  op->handle = profiler::start(context_.load(std::memory_order_relaxed), &d);
  profiler::record(op->handle, ncclProfilerProxyOpInProgress_v4);
  ++rec.openProxyOps;
  // Stopped ProxyOps at the front are done with.
  while (!l->ops.empty() && l->ops.front()->stopped) l->ops.pop_front();
  l->ops.push_back(std::move(op));
  return l->ops.back().get();
}

void ProxyProfile::maybeStopProxyOp(Link* l, ProxyOpRec* op) {
  if (op->stopped || op->open > 0) return;
  auto it = ops_.find(op->key);
  const bool executorDone = it == ops_.end() || it->second.executorDone;
  const bool allStarted = op->expected > 0 && op->started >= op->expected;
  // Without a known count, the executor's end closes a receiving ProxyOp (every message it
  // consumed had arrived) but not a sending one, whose later messages may still come.
  if (!allStarted && !op->superseded && !(executorDone && op->expected == 0 && !l->isSend)) return;
  op->stopped = true;
  profiler::stop(op->handle);
  if (it != ops_.end()) {
    --it->second.openProxyOps;
    settle(op->key);
  }
}

void ProxyProfile::startStep(Link* l, ProxyOpRec* op, uint64_t msg, size_t bytes, int state) {
  ncclProfilerEventDescr_t d{};
  d.type = ncclProfileProxyStep;
  d.parentObj = op->handle;
  d.rank = rank_;
  d.proxyStep.step = op->started++;
  ++op->open;
  StepRec s;
  s.msg = msg;
  s.bytes = bytes;
  s.op = op;
  s.handle = profiler::start(context_.load(std::memory_order_relaxed), &d);
  ncclProfilerEventStateArgs_t args{};
  args.proxyStep.transSize = bytes;
  profiler::record(s.handle, static_cast<ncclProfilerEventState_t>(state), &args);
  l->steps.push_back(s);
  if (l->isSend) {
    auto it = ops_.find(op->key);
    if (it != ops_.end()) --it->second.pendingSends;
  }
}

void ProxyProfile::stopStep(Link* l, size_t index) {
  ProxyOpRec* op = l->steps[index].op;
  profiler::stop(l->steps[index].handle);
  l->steps.erase(l->steps.begin() + static_cast<std::ptrdiff_t>(index));
  --op->open;
  maybeStopProxyOp(l, op);
}

void ProxyProfile::sendReady(Link* l, uint64_t key, uint64_t msg, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!on() || l->dropped) return;
  if (!l->steps.empty() && l->steps.back().msg >= msg) return;  // a retried isend
  if (ProxyOpRec* op = proxyOpFor(l, key)) startStep(l, op, msg, bytes, ncclProfilerProxyStepSendPeerWait_v4);
}

void ProxyProfile::sendPosted(Link* l, uint64_t msg) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!on()) return;
  for (StepRec& s : l->steps)
    if (s.msg == msg && !s.posted) {
      s.posted = true;
      ncclProfilerEventStateArgs_t args{};
      args.proxyStep.transSize = s.bytes;
      profiler::record(s.handle, ncclProfilerProxyStepSendWait, &args);
    }
}

void ProxyProfile::sendDone(Link* l, uint64_t msg) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!on()) return;
  for (size_t i = 0; i < l->steps.size(); ++i)
    if (l->steps[i].msg == msg) return stopStep(l, i);
}

void ProxyProfile::recvArrived(Link* l, uint64_t key, uint64_t msg, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!on() || l->dropped) return;
  // Receives are posted ahead: a peer that runs ahead fills them before this rank's operation
  // started. Such a message gets its step when the operation is registered (opStarted).
  if (ops_.find(key) == ops_.end()) {
    l->early.push_back(Early{key, msg, bytes});
    return;
  }
  if (ProxyOpRec* op = proxyOpFor(l, key)) startStep(l, op, msg, bytes, ncclProfilerProxyStepRecvGPUWait);
}

void ProxyProfile::recvConsumed(Link* l, uint64_t consumed) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!on()) return;
  while (!l->steps.empty() && l->steps.front().msg < consumed) stopStep(l, 0);
  // Early messages of operations that never registered (they ran without proxy events).
  while (!l->early.empty() && l->early.front().msg < consumed) l->early.pop_front();
}

void* ProxyProfile::stepEvent(Link* l, uint64_t msg) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const StepRec& s : l->steps)
    if (s.msg == msg) return s.handle;
  return nullptr;
}

void* ProxyProfile::startNetEvent(void* step, int64_t pluginId, void* data) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!on()) return nullptr;
  ncclProfilerEventDescr_t d{};
  d.type = ncclProfileNetPlugin;
  d.parentObj = step;
  d.rank = rank_;
  d.netPlugin.id = pluginId;
  d.netPlugin.data = data;
  return profiler::start(context_.load(std::memory_order_relaxed), &d);
}

ncclResult_t netProfilerCallback(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData) {
  if (eHandle == nullptr) return ncclInvalidArgument;
  if (type == ncclProfilerNetEventStart) {
    const auto* parent = static_cast<const NetParent*>(pHandle);
    *eHandle = parent != nullptr && parent->profile != nullptr && profiler::active()
                   ? parent->profile->startNetEvent(parent->step, pluginId, extData)
                   : nullptr;
    return ncclSuccess;
  }
  if (type == ncclProfilerNetEventUpdate || type == ncclProfilerNetEventUpdateAndStop) {
    ncclProfilerEventStateArgs_t args{};
    args.netPlugin.data = extData;
    profiler::record(*eHandle, ncclProfilerNetPluginUpdate, &args);
  }
  if (type == ncclProfilerNetEventStop || type == ncclProfilerNetEventUpdateAndStop) {
    profiler::stop(*eHandle);
    *eHandle = nullptr;
  }
  return ncclSuccess;
}

}  // namespace weft::net
