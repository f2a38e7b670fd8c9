#include "coll_cases.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

#include "dtypes.h"
#include "reference.h"

namespace weft_test {

const char* collName(Coll coll) {
  switch (coll) {
    case Coll::kAllReduce: return "AllReduce";
    case Coll::kBroadcast: return "Broadcast";
    case Coll::kBcast: return "Bcast";
    case Coll::kReduce: return "Reduce";
    case Coll::kAllGather: return "AllGather";
    case Coll::kReduceScatter: return "ReduceScatter";
    case Coll::kAlltoAll: return "AlltoAll";
    case Coll::kGather: return "Gather";
    case Coll::kScatter: return "Scatter";
    case Coll::kAlltoAllv: return "AlltoAllv";
    case Coll::kAllGatherv: return "AllGatherv";
    case Coll::kReduceScatterv: return "ReduceScatterv";
  }
  return "?";
}

const std::vector<Coll>& allColls() {
  static const std::vector<Coll> all = {Coll::kAllReduce, Coll::kBroadcast,     Coll::kBcast,    Coll::kReduce,
                                        Coll::kAllGather, Coll::kReduceScatter, Coll::kAlltoAll, Coll::kGather,
                                        Coll::kScatter,   Coll::kAlltoAllv};
  return all;
}

const std::vector<Coll>& unevenColls() {
  static const std::vector<Coll> all = {Coll::kAllGatherv, Coll::kReduceScatterv};
  return all;
}

bool collReduces(Coll coll) {
  return coll == Coll::kAllReduce || coll == Coll::kReduce || coll == Coll::kReduceScatter ||
         coll == Coll::kReduceScatterv;
}

bool builtinRedOp(Red red, ncclRedOp_t* op) {
  switch (red) {
    case Red::kSum: *op = ncclSum; return true;
    case Red::kProd: *op = ncclProd; return true;
    case Red::kMax: *op = ncclMax; return true;
    case Red::kMin: *op = ncclMin; return true;
    case Red::kAvg: *op = ncclAvg; return true;
    case Red::kPreMulImm:
    case Red::kPreMulDev: break;
  }
  return false;
}

bool collHasRoot(Coll coll) {
  return coll == Coll::kBroadcast || coll == Coll::kBcast || coll == Coll::kReduce || coll == Coll::kGather ||
         coll == Coll::kScatter;
}

bool collAllowsInPlace(Coll coll) { return coll != Coll::kAlltoAll && coll != Coll::kAlltoAllv; }
bool collAllowsOutOfPlace(Coll coll) { return coll != Coll::kBcast; }

const char* redName(Red red) {
  switch (red) {
    case Red::kSum: return "sum";
    case Red::kProd: return "prod";
    case Red::kMax: return "max";
    case Red::kMin: return "min";
    case Red::kAvg: return "avg";
    case Red::kPreMulImm: return "premulsum_host";
    case Red::kPreMulDev: return "premulsum_dev";
  }
  return "?";
}

const std::vector<Red>& allReds() {
  static const std::vector<Red> all = {Red::kSum, Red::kProd,      Red::kMax,      Red::kMin,
                                       Red::kAvg, Red::kPreMulImm, Red::kPreMulDev};
  return all;
}

std::string CollCase::name() const {
  std::string s = std::string(collName(coll)) + "/" + dtypeInfo(dtype).name;
  if (collReduces(coll)) s += std::string("/") + redName(red);
  s += "/c" + std::to_string(count) + (inPlace ? (evenRanksOnly ? "/inplace_even_ranks" : "/inplace") : "/outofplace") +
       (shifted ? "/shifted" : "");
  if (collHasRoot(coll)) s += "/root" + std::to_string(root);
  return s;
}

std::vector<int> rootsFor(int nranks) {
  std::vector<int> roots = {0, nranks / 2, nranks - 1};
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

// ---------------------------------------------------------------------------------------------

namespace {

constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuardByte = 0xCD;

// Bytes with a guard zone on either side. data() is 64-byte aligned plus `shift` bytes: a shift of
// one element leaves the buffer aligned to its element size only, as user buffers may be.
class GuardedBuffer {
 public:
  void allocate(size_t shift, size_t bytes) {
    bytes_ = bytes;
    front_ = kGuardBytes + shift;
    storage_.reset(static_cast<unsigned char*>(::operator new (front_ + bytes + kGuardBytes, std::align_val_t{64})));
    memset(storage_.get(), kGuardByte, front_ + bytes + kGuardBytes);
  }
  bool allocated() const { return storage_ != nullptr; }
  unsigned char* data() { return storage_.get() + front_; }
  const unsigned char* data() const { return storage_.get() + front_; }
  size_t bytes() const { return bytes_; }
  bool guardsIntact() const {
    for (size_t i = 0; i < front_; ++i)
      if (storage_[i] != kGuardByte) return false;
    for (size_t i = 0; i < kGuardBytes; ++i)
      if (storage_[front_ + bytes_ + i] != kGuardByte) return false;
    return true;
  }

 private:
  struct AlignedDelete {
    void operator()(unsigned char* p) const { ::operator delete (p, std::align_val_t{64}); }
  };
  std::unique_ptr<unsigned char[], AlignedDelete> storage_;
  size_t bytes_ = 0;
  size_t front_ = 0;
};

uint64_t fnv1a(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Compares `count` elements at out[offset..] with expect(i); reports the first few differences.
template <typename ExpectFn>
void checkRange(Reporter* rep, const std::string& label, const char* what, ncclDataType_t dtype,
                const unsigned char* out, size_t offset, size_t count, ExpectFn expect) {
  const size_t size = dtypeInfo(dtype).size;
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < count; ++i) {
    const Expect e = expect(i);
    const uint64_t got = loadBits(out, offset + i, size);
    if (matches(dtype, e, got)) continue;
    if (++bad <= 3) {
      first += " [" + std::to_string(offset + i) + "] got " + formatBits(dtype, got) + " expected " +
               describe(dtype, e) + ";";
    }
  }
  if (bad) rep->failf("%s: %s: %zu of %zu elements wrong:%s", label.c_str(), what, bad, count, first.c_str());
}

}  // namespace

struct CaseRun::Impl {
  Impl(const CollCase& cc, int r, int n) : c(cc), rank(r), nranks(n), ref(cc, n), esize(dtypeInfo(cc.dtype).size) {}
  CollCase c;
  int rank = 0;
  int nranks = 0;
  Reference ref;
  bool inPlace = false;  // this rank's placement (see CollCase::evenRanksOnly)
  size_t esize = 0;
  GuardedBuffer a;  // the send buffer, or the only buffer when in place
  GuardedBuffer b;  // the receive buffer when out of place
  const void* send = nullptr;
  void* recv = nullptr;
  std::vector<unsigned char> sendCopy;  // the send buffer as filled, to prove it was only read
  const unsigned char* sendCheck = nullptr;
  // AlltoAllv layout (elements), with a one-element gap after every block.
  std::vector<size_t> scounts, sdispls, rcounts, rdispls;
  // AllGatherv and ReduceScatterv layout (vcollLayout) and the elements it spans.
  std::vector<size_t> vcounts, vdispls;
  size_t vextent = 0;
  // PreMulSum.
  ncclRedOp_t op = ncclSum;
  bool opCreated = false;
  alignas(8) unsigned char scalar[8] = {};

  bool isRoot() const { return rank == c.root; }
  std::string label() const { return c.name() + " nranks=" + std::to_string(nranks) + " rank=" + std::to_string(rank); }
  void fillInput(unsigned char* p, size_t n, size_t firstIdx) const {
    for (size_t i = 0; i < n; ++i) storeBits(p, i, esize, ref.input(rank, firstIdx + i));
  }
  void fillJunk(unsigned char* p, size_t n) const {
    for (size_t i = 0; i < n; ++i) storeBits(p, i, esize, ref.junk(rank, i));
  }
  void setup();
};

void CaseRun::Impl::setup() {
  const size_t cnt = c.count;
  const size_t n = static_cast<size_t>(nranks);
  const size_t shift = c.shifted ? esize : 0;
  inPlace = c.inPlace && !(c.evenRanksOnly && rank % 2 == 1);
  auto outOfPlace = [&](size_t sendElems, size_t recvElems) {
    a.allocate(shift, sendElems * esize);
    b.allocate(shift, recvElems * esize);
    fillInput(a.data(), sendElems, 0);
    fillJunk(b.data(), recvElems);
    send = a.data();
    recv = b.data();
  };
  switch (c.coll) {
    case Coll::kAllReduce:
    case Coll::kReduce:
      if (inPlace) {
        a.allocate(shift, cnt * esize);
        fillInput(a.data(), cnt, 0);
        send = recv = a.data();
      } else {
        outOfPlace(cnt, cnt);
      }
      break;
    case Coll::kBroadcast:
    case Coll::kBcast:
      if (inPlace || c.coll == Coll::kBcast) {
        a.allocate(shift, cnt * esize);
        if (isRoot())
          fillInput(a.data(), cnt, 0);
        else
          fillJunk(a.data(), cnt);
        send = recv = a.data();
      } else {
        outOfPlace(cnt, cnt);  // non-roots' send buffers hold their own data: it must be ignored
      }
      break;
    case Coll::kAllGather:
      if (inPlace) {
        a.allocate(shift, n * cnt * esize);
        fillJunk(a.data(), n * cnt);
        fillInput(a.data() + rank * cnt * esize, cnt, 0);
        recv = a.data();
        send = a.data() + rank * cnt * esize;
      } else {
        outOfPlace(cnt, n * cnt);
      }
      break;
    case Coll::kReduceScatter:
      if (inPlace) {
        a.allocate(shift, n * cnt * esize);
        fillInput(a.data(), n * cnt, 0);
        send = a.data();
        recv = a.data() + rank * cnt * esize;
      } else {
        outOfPlace(n * cnt, cnt);
      }
      break;
    case Coll::kAlltoAll: outOfPlace(n * cnt, n * cnt); break;
    case Coll::kGather:
      if (inPlace && isRoot()) {
        a.allocate(shift, n * cnt * esize);
        fillJunk(a.data(), n * cnt);
        fillInput(a.data() + rank * cnt * esize, cnt, 0);
        recv = a.data();
        send = a.data() + rank * cnt * esize;
      } else {
        outOfPlace(cnt, n * cnt);
      }
      break;
    case Coll::kScatter:
      if (inPlace && isRoot()) {
        a.allocate(shift, n * cnt * esize);
        fillInput(a.data(), n * cnt, 0);
        send = a.data();
        recv = a.data() + rank * cnt * esize;
      } else {
        outOfPlace(n * cnt, cnt);
      }
      break;
    case Coll::kAlltoAllv: {
      size_t sTotal = 0, rTotal = 0;
      for (int p = 0; p < nranks; ++p) {
        scounts.push_back(alltoallvCount(cnt, rank, p));
        sdispls.push_back(sTotal);
        sTotal += scounts.back() + 1;
        rcounts.push_back(alltoallvCount(cnt, p, rank));
        rdispls.push_back(rTotal);
        rTotal += rcounts.back() + 1;
      }
      a.allocate(shift, sTotal * esize);
      b.allocate(shift, rTotal * esize);
      fillJunk(a.data(), sTotal);
      fillJunk(b.data(), rTotal);
      // Block for peer p holds input elements p*(cnt+2) + e (a different range for every peer).
      for (int p = 0; p < nranks; ++p)
        fillInput(a.data() + sdispls[p] * esize, scounts[p], static_cast<size_t>(p) * (cnt + 2));
      send = a.data();
      recv = b.data();
      break;
    }
    case Coll::kAllGatherv:
      vextent = vcollLayout(cnt, nranks, &vcounts, &vdispls);
      if (inPlace) {
        a.allocate(shift, vextent * esize);
        fillJunk(a.data(), vextent);
        fillInput(a.data() + vdispls[rank] * esize, vcounts[rank], 0);
        recv = a.data();
        send = a.data() + vdispls[rank] * esize;
      } else {
        outOfPlace(vcounts[rank], vextent);
      }
      break;
    case Coll::kReduceScatterv:
      vextent = vcollLayout(cnt, nranks, &vcounts, &vdispls);
      if (inPlace) {
        a.allocate(shift, vextent * esize);
        fillInput(a.data(), vextent, 0);
        send = a.data();
        recv = a.data() + vdispls[rank] * esize;
      } else {
        outOfPlace(vextent, vcounts[rank]);
      }
      break;
  }
  if (b.allocated()) {  // out of place: the send buffer is only read
    sendCopy.assign(a.data(), a.data() + a.bytes());
    sendCheck = a.data();
  }
}

CaseRun::CaseRun(const CollCase& c, int rank, int nranks) : impl_(std::make_unique<Impl>(c, rank, nranks)) {
  impl_->setup();
}

CaseRun::~CaseRun() = default;

std::string CaseRun::label() const { return impl_->label(); }

bool CaseRun::createOp(ncclComm_t comm, Reporter* rep) {
  Impl& m = *impl_;
  if (!collReduces(m.c.coll) || builtinRedOp(m.c.red, &m.op)) return true;
  const bool device = m.c.red == Red::kPreMulDev;
  storeBits(m.scalar, 0, m.esize, device ? wrongScalarBits(m.c.dtype) : scalarBits(m.c.dtype, m.rank));
  const ncclResult_t r = ncclRedOpCreatePreMulSum(&m.op, m.scalar, m.c.dtype,
                                                  device ? ncclScalarDevice : ncclScalarHostImmediate, comm);
  if (!rep->ok(r, (m.label() + ": ncclRedOpCreatePreMulSum").c_str(), comm)) return false;
  m.opCreated = true;
  if (!device) storeBits(m.scalar, 0, m.esize, wrongScalarBits(m.c.dtype));  // must have been copied
  return true;
}

void CaseRun::armScalar() {
  Impl& m = *impl_;
  if (m.opCreated && m.c.red == Red::kPreMulDev) storeBits(m.scalar, 0, m.esize, scalarBits(m.c.dtype, m.rank));
}

bool CaseRun::destroyOp(ncclComm_t comm, Reporter* rep) {
  Impl& m = *impl_;
  if (!m.opCreated) return true;
  m.opCreated = false;
  return rep->ok(ncclRedOpDestroy(m.op, comm), (m.label() + ": ncclRedOpDestroy").c_str(), comm);
}

ncclResult_t CaseRun::issue(ncclComm_t comm) const {
  const Impl& m = *impl_;
  const CollCase& c = m.c;
  switch (c.coll) {
    case Coll::kAllReduce: return ncclAllReduce(m.send, m.recv, c.count, c.dtype, m.op, comm, nullptr);
    case Coll::kBroadcast: return ncclBroadcast(m.send, m.recv, c.count, c.dtype, c.root, comm, nullptr);
    case Coll::kBcast: return ncclBcast(m.recv, c.count, c.dtype, c.root, comm, nullptr);
    case Coll::kReduce: return ncclReduce(m.send, m.recv, c.count, c.dtype, m.op, c.root, comm, nullptr);
    case Coll::kAllGather: return ncclAllGather(m.send, m.recv, c.count, c.dtype, comm, nullptr);
    case Coll::kReduceScatter: return ncclReduceScatter(m.send, m.recv, c.count, c.dtype, m.op, comm, nullptr);
    case Coll::kAlltoAll: return ncclAlltoAll(m.send, m.recv, c.count, c.dtype, comm, nullptr);
    case Coll::kGather: return ncclGather(m.send, m.recv, c.count, c.dtype, c.root, comm, nullptr);
    case Coll::kScatter: return ncclScatter(m.send, m.recv, c.count, c.dtype, c.root, comm, nullptr);
    case Coll::kAlltoAllv:
      return ncclAlltoAllv(m.send, m.scounts.data(), m.sdispls.data(), m.recv, m.rcounts.data(), m.rdispls.data(),
                           c.dtype, comm, nullptr);
    case Coll::kAllGatherv:
      return weftAllGatherv(m.send, m.recv, m.vcounts.data(), m.vdispls.data(), c.dtype, comm, nullptr);
    case Coll::kReduceScatterv:
      return weftReduceScatterv(m.send, m.recv, m.vcounts.data(), m.vdispls.data(), c.dtype, m.op, comm, nullptr);
  }
  return ncclInternalError;
}

void CaseRun::verify(Reporter* rep) const {
  const Impl& m = *impl_;
  const CollCase& c = m.c;
  const size_t cnt = c.count;
  const int n = m.nranks;
  const int r = m.rank;
  const std::string label = m.label();
  const auto* out = static_cast<const unsigned char*>(m.recv);
  auto input = [&](int src, size_t idx) { return exactly(m.ref.input(src, idx)); };
  auto reduced = [&](size_t idx) { return m.ref.reduced(idx); };

  switch (c.coll) {
    case Coll::kAllReduce:
      checkRange(rep, label, "result", c.dtype, out, 0, cnt, reduced);
      rep->digest(c.name() + " nranks=" + std::to_string(n), fnv1a(out, cnt * m.esize));
      break;
    case Coll::kReduce:
      if (m.isRoot()) checkRange(rep, label, "result on the root", c.dtype, out, 0, cnt, reduced);
      break;
    case Coll::kBroadcast:
    case Coll::kBcast:
      checkRange(rep, label, "broadcast data", c.dtype, out, 0, cnt, [&](size_t i) { return input(c.root, i); });
      break;
    case Coll::kAllGather:
      for (int p = 0; p < n; ++p)
        checkRange(rep, label, ("block from rank " + std::to_string(p)).c_str(), c.dtype, out, p * cnt, cnt,
                   [&](size_t i) { return input(p, i); });
      break;
    case Coll::kReduceScatter:
      checkRange(rep, label, "result block", c.dtype, out, 0, cnt, [&](size_t i) { return reduced(r * cnt + i); });
      break;
    case Coll::kAlltoAll:
      for (int p = 0; p < n; ++p)
        checkRange(rep, label, ("block from rank " + std::to_string(p)).c_str(), c.dtype, out, p * cnt, cnt,
                   [&](size_t i) { return input(p, r * cnt + i); });
      break;
    case Coll::kGather:
      if (m.isRoot()) {
        for (int p = 0; p < n; ++p)
          checkRange(rep, label, ("block from rank " + std::to_string(p)).c_str(), c.dtype, out, p * cnt, cnt,
                     [&](size_t i) { return input(p, i); });
      }
      break;
    case Coll::kScatter:
      checkRange(rep, label, "block from the root", c.dtype, out, 0, cnt,
                 [&](size_t i) { return input(c.root, r * cnt + i); });
      if (m.inPlace && m.isRoot()) {
        // The root's whole send buffer (its own block included) is input: unchanged.
        checkRange(rep, label, "root's send buffer (in place)", c.dtype, m.a.data(), 0, n * cnt,
                   [&](size_t i) { return input(r, i); });
      }
      break;
    case Coll::kAlltoAllv:
      for (int p = 0; p < n; ++p) {
        const size_t base = static_cast<size_t>(r) * (cnt + 2);
        checkRange(rep, label, ("block from rank " + std::to_string(p)).c_str(), c.dtype, out, m.rdispls[p],
                   m.rcounts[p], [&](size_t i) { return input(p, base + i); });
        // The gap after each block is not part of any block: it keeps its junk.
        checkRange(rep, label, "gap between receive blocks", c.dtype, out, m.rdispls[p] + m.rcounts[p], 1,
                   [&](size_t i) { return exactly(m.ref.junk(r, m.rdispls[p] + m.rcounts[p] + i)); });
      }
      break;
    case Coll::kAllGatherv:
      for (int p = 0; p < n; ++p) {
        checkRange(rep, label, ("block from rank " + std::to_string(p)).c_str(), c.dtype, out, m.vdispls[p],
                   m.vcounts[p], [&](size_t i) { return input(p, i); });
        // Gaps belong to no block: they keep what they held (the rank's own input, in place).
        const size_t gap = m.vdispls[p] + m.vcounts[p];
        checkRange(rep, label, "gap between blocks", c.dtype, out, gap, 1,
                   [&](size_t i) { return exactly(m.ref.junk(r, gap + i)); });
      }
      break;
    case Coll::kReduceScatterv:
      checkRange(rep, label, "result block", c.dtype, out, 0, m.vcounts[r],
                 [&](size_t i) { return reduced(m.vdispls[r] + i); });
      break;
  }
  // An empty send buffer has no copy (data() is null), and memcmp must not be given null.
  if (m.sendCheck && !m.sendCopy.empty() && memcmp(m.sendCheck, m.sendCopy.data(), m.sendCopy.size()) != 0)
    rep->failf("%s: the send buffer changed (an out-of-place collective must only read it)", label.c_str());
  if (m.a.allocated() && !m.a.guardsIntact())
    rep->failf("%s: bytes just outside the %s buffer were overwritten", label.c_str(),
               m.b.allocated() ? "send" : "only");
  if (m.b.allocated() && !m.b.guardsIntact())
    rep->failf("%s: bytes just outside the receive buffer were overwritten", label.c_str());
}

bool runCaseOnRank(const CollCase& c, RankCtx& ctx) {
  CaseRun run(c, ctx.rank, ctx.nranks);
  if (!run.createOp(ctx.comm, &ctx)) return false;
  run.armScalar();
  ctx.step(run.label());
  const ncclResult_t r = run.issue(ctx.comm);
  if (!ctx.ok(r, run.label().c_str(), ctx.comm)) return false;
  run.verify(&ctx);
  return run.destroyOp(ctx.comm, &ctx);
}

bool runCaseOnClique(const CollCase& c, CliqueCtx& ctx) {
  std::vector<std::unique_ptr<CaseRun>> runs;
  for (int r = 0; r < ctx.nranks; ++r) {
    runs.push_back(std::make_unique<CaseRun>(c, r, ctx.nranks));
    if (!runs.back()->createOp(ctx.comms[r], &ctx)) return false;
  }
  ctx.step("group of " + c.name());
  bool ok = ctx.ok(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; ok && r < ctx.nranks; ++r)
    ok = ctx.ok(runs[r]->issue(ctx.comms[r]), runs[r]->label().c_str(), ctx.comms[r]);
  // A device scalar is read when the group executes: arming it after the calls were enqueued
  // (and before ncclGroupEnd) must still count.
  for (auto& run : runs) run->armScalar();
  const ncclResult_t end = ncclGroupEnd();
  if (!ok) return false;
  if (!ctx.ok(end, ("ncclGroupEnd after " + c.name()).c_str())) return false;
  for (auto& run : runs) run->verify(&ctx);
  for (int r = 0; r < ctx.nranks; ++r) ok = runs[r]->destroyOp(ctx.comms[r], &ctx) && ok;
  return ok;
}

}  // namespace weft_test
