// What the executor trusts a program to be, checked before a test runs it (program_sim.h): every
// sequence belongs to its rank's tasks and names real peers, a multi-peer step's masks name peers
// its sequence has, a step that receives (sends) has a peer to do it with, no two chains of one
// rank share a FIFO (their messages would interleave in whatever order the chains happen to run),
// every piece a step reads or writes lies inside the buffer extents the test declared, and a
// source and a destination are the same memory or disjoint (reduceCopy's contract). The pieces
// are cut exactly as the executor cuts them (slotBytes / element size), so a piece-level problem
// is found without running anything.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "program/program.h"
#include "task/task.h"

namespace weft::sim {

// How many elements of a task's send and receive buffers its algorithm may touch (0: unused, as
// NCCL leaves some buffers on some ranks); the scratch area has no extent.
struct Extent {
  size_t sendElems = 0, recvElems = 0;
};

class ProgramLint {
 public:
  ProgramLint(int nranks, uint32_t slotBytes, bool allowSharedLinks)
      : n_(nranks), slotBytes_(slotBytes), allowShared_(allowSharedLinks) {}

  // "" when rank r's program is fine; otherwise what is wrong, naming the sequence (and step).
  std::string check(int r, const Program& p, const std::vector<Task>& tasks, const std::vector<Extent>& extents,
                    uintptr_t scope) const {
    std::map<ChainKey, std::vector<uint32_t>> chains;
    for (uint32_t i = 0; i < p.sequences.size(); ++i) {
      const Sequence& s = p.sequences[i];
      const std::string where = "rank " + std::to_string(r) + " sequence " + std::to_string(i) + " ";
      std::string bad;
      if (s.task >= tasks.size() || s.scope != scope)
        bad = "does not belong to this rank's tasks";
      else if (s.sendPeer < -1 || s.sendPeer >= n_ || s.recvPeer < -1 || s.recvPeer >= n_)
        bad = "names a peer outside [0, nranks)";
      else if (s.multiPeer())
        bad = badMultiPeer(r, p, s);
      else if (s.firstStep + uint64_t(s.nSteps) > p.steps.size())
        bad = "has steps past the end of the program";
      if (bad.empty()) bad = badSteps(p, s, tasks[s.task], extents[s.task]);
      if (!bad.empty()) return where + bad;
      chains[chainKeyOf(s)].push_back(i);
    }
    return sharedLinks(r, p, tasks, chains);
  }

  static std::string linkName(int lane, int channel, int from, int to) {
    return std::string(laneName(static_cast<Lane>(lane))) + " ch " + std::to_string(channel) + " " +
           std::to_string(from) + "->" + std::to_string(to);
  }

 private:
  // What is wrong with a multi-peer sequence's peers or its steps' masks ("" when nothing).
  std::string badMultiPeer(int r, const Program& p, const Sequence& s) const {
    if (s.nSendPeers > kMaxSeqPeers || s.nRecvPeers > kMaxSeqPeers) return "has more than kMaxSeqPeers peers";
    for (int k = 0; k < s.nSendPeers + s.nRecvPeers; ++k) {
      const int peer = k < s.nSendPeers ? s.sendPeers[k] : s.recvPeers[k - s.nSendPeers];
      if (peer < 0 || peer >= n_) return "names a peer outside [0, nranks)";
      if (peer == r) return "names itself as a peer";
    }
    for (int k = 0; k < s.nSendPeers; ++k)
      for (int j = 0; j < k; ++j)
        if (s.sendPeers[j] == s.sendPeers[k]) return "names a send peer twice";
    for (int k = 0; k < s.nRecvPeers; ++k)
      for (int j = 0; j < k; ++j)
        if (s.recvPeers[j] == s.recvPeers[k]) return "names a receive peer twice";
    for (uint32_t i = 0; i < s.nSteps && s.firstStep + uint64_t(i) < p.steps.size(); ++i) {
      const Step& st = p.steps[s.firstStep + i];
      if ((st.recvMask >> s.nRecvPeers) != 0 || (st.sendMask >> s.nSendPeers) != 0)
        return "has step " + std::to_string(i) + " whose mask names a peer the sequence lacks";
      if (stepReceives(st.op) != (st.recvMask != 0) || stepSends(st.op) != (st.sendMask != 0))
        return "has step " + std::to_string(i) + " (" + stepName(st.op) + ") whose masks do not match its op";
    }
    return "";
  }

  std::string badSteps(const Program& p, const Sequence& s, const Task& t, const Extent& e) const {
    if (s.lane == Lane::kDirect || s.firstStep + uint64_t(s.nSteps) > p.steps.size()) return "";
    const size_t es = dataTypeSize(t.dtype);
    for (uint32_t i = 0; i < s.nSteps; ++i) {
      const Step& st = p.steps[s.firstStep + i];
      const std::string at = "step " + std::to_string(i) + "/" + std::to_string(s.nSteps) + " " + stepName(st.op) + " ";
      if (st.count == 0) continue;
      if (es == 0 || slotBytes_ < es) return at + "a FIFO slot cannot hold one element";
      if (!s.multiPeer() && stepReceives(st.op) && s.recvPeer < 0)
        return at + "receives but its sequence has no receive peer";
      if (!s.multiPeer() && stepSends(st.op) && s.sendPeer < 0) return at + "sends but its sequence has no send peer";
      const size_t piece = slotBytes_ / es;
      for (size_t done = 0; done < st.count; done += piece) {
        std::string bad = badPiece(st, t, e, done, std::min(piece, st.count - done), es);
        if (!bad.empty())
          return at + "(" + std::to_string(done) + " of " + std::to_string(st.count) + " elements done) " + bad;
      }
    }
    return "";
  }

  static std::string badPiece(const Step& st, const Task& t, const Extent& e, size_t done, size_t n, size_t es) {
    auto extent = [&](Buf b) { return b == Buf::kSend ? e.sendElems : b == Buf::kRecv ? e.recvElems : SIZE_MAX; };
    auto name = [](Buf b) { return b == Buf::kSend ? "sendbuff" : b == Buf::kRecv ? "recvbuff" : "scratch"; };
    auto base = [&](Buf b) {
      return reinterpret_cast<uintptr_t>(b == Buf::kSend   ? t.sendbuff
                                         : b == Buf::kRecv ? static_cast<const void*>(t.recvbuff)
                                                           : t.scratch);
    };
    const size_t from = st.srcOffset + done, to = st.dstOffset + done;
    const size_t srcN = extent(st.srcBuf), dstN = extent(st.dstBuf);
    if (stepReadsSrc(st.op) && (from > srcN || n > srcN - from))
      return std::string("reads ") + name(st.srcBuf) + " elements [" + std::to_string(from) + ", " +
             std::to_string(from + n) + ") outside its " + std::to_string(srcN) + " elements";
    if (stepWritesDst(st.op) && (to > dstN || n > dstN - to))
      return std::string("writes ") + name(st.dstBuf) + " elements [" + std::to_string(to) + ", " +
             std::to_string(to + n) + ") outside its " + std::to_string(dstN) + " elements";
    if (stepReadsSrc(st.op) && stepWritesDst(st.op)) {
      const uintptr_t a = base(st.srcBuf) + from * es, b = base(st.dstBuf) + to * es;
      if (a != b && a < b + n * es && b < a + n * es) return "source and destination partially overlap";
    }
    return "";
  }

  // A link used by two chains carries both chains' messages in the order the chains happen to run,
  // while the peer reads them in its own chain's order: a race in the executor.
  std::string sharedLinks(int r, const Program& p, const std::vector<Task>& tasks,
                          const std::map<ChainKey, std::vector<uint32_t>>& chains) const {
    using LinkKey = std::tuple<int, int, int, int>;  // lane, channel, sender, receiver
    std::map<LinkKey, uint32_t> linkUser;            // link -> first sequence that used it
    for (const auto& [key, seqs] : chains) {
      std::map<LinkKey, bool> mine;
      for (uint32_t i : seqs) {
        const Sequence& s = p.sequences[i];
        // Every link the sequence may use: send links first, then receive links.
        std::vector<std::pair<LinkKey, int>> links;  // link, direction (0 send, 1 receive)
        if (s.multiPeer()) {
          for (int k = 0; k < s.nSendPeers; ++k) links.push_back({{int(s.lane), s.channel, r, s.sendPeers[k]}, 0});
          for (int k = 0; k < s.nRecvPeers; ++k) links.push_back({{int(s.lane), s.channel, s.recvPeers[k], r}, 1});
        } else {
          if (s.sendPeer >= 0) links.push_back({{int(s.lane), s.channel, r, s.sendPeer}, 0});
          if (s.recvPeer >= 0) links.push_back({{int(s.lane), s.channel, s.recvPeer, r}, 1});
        }
        for (const auto& [link, d] : links) {
          auto [o, fresh] = linkUser.emplace(link, i);
          if (fresh) mine[link] = true;
          if (fresh || mine.count(link) || allowShared_) continue;
          const Task& first = tasks[p.sequences[o->second].task];
          const Task& second = tasks[s.task];
          return "rank " + std::to_string(r) + ": " + collName(first.kind) + " #" + std::to_string(first.seq) +
                 " and " + collName(second.kind) + " #" + std::to_string(second.seq) +
                 " are in different chains but both " + (d == 0 ? "send on " : "receive on ") +
                 linkName(std::get<0>(link), std::get<1>(link), std::get<2>(link), std::get<3>(link)) +
                 ": their messages interleave in whatever order the two chains run";
        }
      }
    }
    return "";
  }

  int n_;
  uint32_t slotBytes_;
  bool allowShared_;
};

}  // namespace weft::sim
