// Helpers shared by the network tests: environment save/restore, connecting a pair over a
// Network, and moving messages through it with every wait bounded.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/params.h"
#include "transports/net/network.h"

namespace weft::nettest {

// Sets variables for one test and puts the previous values back afterwards.
class ScopedEnv {
 public:
  void set(const std::string& name, const std::string& value) {
    remember(name);
    setenv(name.c_str(), value.c_str(), 1);
    param::reloadForTesting();
  }
  void unset(const std::string& name) {
    remember(name);
    unsetenv(name.c_str());
    param::reloadForTesting();
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value.first)
        setenv(name.c_str(), value.second.c_str(), 1);
      else
        unsetenv(name.c_str());
    }
    param::reloadForTesting();
  }

 private:
  void remember(const std::string& name) {
    if (saved_.count(name)) return;
    const char* v = getenv(name.c_str());
    saved_[name] = {v != nullptr, v != nullptr ? v : ""};
  }
  std::map<std::string, std::pair<bool, std::string>> saved_;
};

using Clock = std::chrono::steady_clock;
inline bool pastSeconds(Clock::time_point start, int s) { return Clock::now() - start > std::chrono::seconds(s); }

struct Pair {
  void* listen = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
};

// listen + connect + accept, polling both non-blocking calls from this thread.
inline ::testing::AssertionResult connectPair(net::Network* n, int dev, Pair* p) {
  char handle[net::kHandleBytes] = {};
  if (n->listen(dev, handle, &p->listen) != ncclSuccess) return ::testing::AssertionFailure() << "listen failed";
  auto start = Clock::now();
  while (p->send == nullptr || p->recv == nullptr) {
    if (p->send == nullptr && n->connect(dev, handle, &p->send) != ncclSuccess)
      return ::testing::AssertionFailure() << "connect failed";
    if (p->recv == nullptr && n->accept(p->listen, &p->recv) != ncclSuccess)
      return ::testing::AssertionFailure() << "accept failed";
    if (pastSeconds(start, 20)) return ::testing::AssertionFailure() << "connection not established in 20 s";
  }
  return ::testing::AssertionSuccess();
}

inline void closePair(net::Network* n, Pair* p) {
  if (p->send) EXPECT_EQ(n->closeSend(p->send), ncclSuccess);
  if (p->recv) EXPECT_EQ(n->closeRecv(p->recv), ncclSuccess);
  if (p->listen) EXPECT_EQ(n->closeListen(p->listen), ncclSuccess);
  *p = Pair{};
}

// Pumps test() on req until it fails; returns the code (ncclSuccess if it completed or timed out).
inline ncclResult_t waitForFailure(net::Network* n, void* req, int seconds) {
  auto start = Clock::now();
  while (!pastSeconds(start, seconds)) {
    int done = 0;
    size_t size = 0;
    ncclResult_t r = n->test(req, &done, &size);
    if (r != ncclSuccess || done) return r;
  }
  return ncclSuccess;
}

inline void fillPattern(std::vector<char>& v, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : v) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
}

// Sends every message of `sizes` at once (as many as the network takes) and checks that each
// arrives intact with its size. Receives are posted `slack` bytes larger than the message. With
// registerBuffers every buffer is registered (regMr) first, as RDMA networks need.
inline ::testing::AssertionResult transfer(net::Network* n, const Pair& p, const std::vector<size_t>& sizes,
                                           size_t slack = 0, bool registerBuffers = false) {
  size_t count = sizes.size();
  std::vector<std::vector<char>> out(count), in(count);
  for (size_t i = 0; i < count; ++i) {
    out[i].resize(sizes[i]);
    fillPattern(out[i], static_cast<uint32_t>(i + 7));
    in[i].assign(sizes[i] + slack, 0);
  }
  std::vector<void*> smh(count, nullptr), rmh(count, nullptr);
  struct Deregister {
    net::Network* n;
    const Pair& p;
    std::vector<void*>& s;
    std::vector<void*>& r;
    ~Deregister() {
      for (void* h : s)
        if (h != nullptr) n->deregMr(p.send, h);
      for (void* h : r)
        if (h != nullptr) n->deregMr(p.recv, h);
    }
  } deregister{n, p, smh, rmh};
  for (size_t i = 0; registerBuffers && i < count; ++i) {  // empty buffers need no registration
    if ((!out[i].empty() && n->regMr(p.send, out[i].data(), out[i].size(), net::kPtrHost, &smh[i]) != ncclSuccess) ||
        (!in[i].empty() && n->regMr(p.recv, in[i].data(), in[i].size(), net::kPtrHost, &rmh[i]) != ncclSuccess))
      return ::testing::AssertionFailure() << "regMr of message " << i << " failed";
  }
  std::vector<void*> sreq(count, nullptr), rreq(count, nullptr);
  std::vector<bool> sdone(count, false), rdone(count, false);
  size_t nextSend = 0, nextRecv = 0, finished = 0;
  auto start = Clock::now();
  while (finished < 2 * count) {
    if (nextSend < count) {
      if (n->isend(p.send, out[nextSend].data(), sizes[nextSend], 0, smh[nextSend], &sreq[nextSend]) != ncclSuccess)
        return ::testing::AssertionFailure() << "isend " << nextSend << " failed";
      if (sreq[nextSend] != nullptr) ++nextSend;
    }
    if (nextRecv < count) {
      if (n->irecv(p.recv, in[nextRecv].data(), in[nextRecv].size(), 0, rmh[nextRecv], &rreq[nextRecv]) != ncclSuccess)
        return ::testing::AssertionFailure() << "irecv " << nextRecv << " failed";
      if (rreq[nextRecv] != nullptr) ++nextRecv;
    }
    for (size_t i = 0; i < count; ++i) {
      int done = 0;
      size_t size = 0;
      if (sreq[i] != nullptr && !sdone[i]) {
        if (n->test(sreq[i], &done, &size) != ncclSuccess) return ::testing::AssertionFailure() << "send test " << i;
        if (done) {
          if (size != sizes[i]) return ::testing::AssertionFailure() << "send " << i << " reported " << size;
          sdone[i] = true;
          ++finished;
        }
      }
      if (rreq[i] != nullptr && !rdone[i]) {
        if (n->test(rreq[i], &done, &size) != ncclSuccess) return ::testing::AssertionFailure() << "recv test " << i;
        if (done) {
          if (size != sizes[i]) return ::testing::AssertionFailure() << "recv " << i << " got " << size << " bytes";
          // An empty message has no buffers (data() is null), and memcmp must not be given null.
          if (sizes[i] != 0 && memcmp(in[i].data(), out[i].data(), sizes[i]) != 0)
            return ::testing::AssertionFailure() << "message " << i << " (" << sizes[i] << " bytes) corrupted";
          rdone[i] = true;
          ++finished;
        }
      }
    }
    if (pastSeconds(start, 60)) return ::testing::AssertionFailure() << "transfer did not finish in 60 s";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace weft::nettest
