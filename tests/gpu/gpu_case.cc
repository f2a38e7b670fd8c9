#include "gpu_case.h"

#include <cstring>

#include "dtypes.h"
#include "reference.h"

namespace weft_test {

bool gpuOk(Reporter* rep, gpuError_t e, const char* what) {
  if (e == gpuSuccess) return true;
  rep->failf("%s failed: %s", what, gpuErrorText(e).c_str());
  return false;
}

// ---------------------------------------------------------------------------------------------
// The thread's device block and copy stream (see reserveDeviceMemory in gpu_case.h)

namespace {

// Enough for the largest case (1,000,003-element AlltoAllv on 4 ranks: about 32 MiB) several times.
constexpr size_t kBlockBytes = size_t{192} << 20;

class DeviceBlock {
 public:
  ~DeviceBlock() {
    if (stream_ != nullptr) (void)gpuStreamDestroy(stream_);
    if (base_ != nullptr) (void)gpuFree(base_);
  }
  bool reserve(Reporter* rep) {
    if (base_ != nullptr) return true;
    void* p = nullptr;
    if (!gpuOk(rep, gpuStreamCreateWithFlags(&stream_, gpuStreamNonBlocking), "gpuStreamCreateWithFlags (copies)") ||
        !gpuOk(rep, gpuMalloc(&p, kBlockBytes), "gpuMalloc (the thread's device block)"))
      return false;
    base_ = static_cast<unsigned char*>(p);
    return true;
  }
  unsigned char* take(size_t bytes, Reporter* rep) {
    if (!reserve(rep)) return nullptr;
    const size_t at = (top_ + 255) / 256 * 256;
    if (at + bytes > kBlockBytes) {
      rep->failf("the test's device block (%zu MiB per thread) is too small for %zu more bytes", kBlockBytes >> 20,
                 bytes);
      return nullptr;
    }
    top_ = at + bytes;
    ++live_;
    return base_ + at;
  }
  void give() {
    if (--live_ == 0) top_ = 0;
  }
  gpuStream_t stream() const { return stream_; }

 private:
  unsigned char* base_ = nullptr;
  gpuStream_t stream_ = nullptr;
  size_t top_ = 0;
  int live_ = 0;
};

thread_local DeviceBlock tBlock;

// Waits for the copy stream; names `what` on failure.
bool copied(Reporter* rep, gpuError_t e, const char* what) {
  return gpuOk(rep, e, what) && gpuOk(rep, gpuStreamSynchronize(tBlock.stream()), what);
}

}  // namespace

bool reserveDeviceMemory(Reporter* rep) { return tBlock.reserve(rep); }

// ---------------------------------------------------------------------------------------------
// DeviceBuffer

DeviceBuffer::~DeviceBuffer() {
  if (base_ != nullptr) tBlock.give();
}

bool DeviceBuffer::allocate(size_t shift, size_t bytes, Reporter* rep) {
  shift_ = shift;
  bytes_ = bytes;
  base_ = tBlock.take(2 * kGuard + shift + bytes, rep);
  return base_ != nullptr && copied(rep, gpuMemsetAsync(base_, kGuardByte, 2 * kGuard + shift + bytes, tBlock.stream()),
                                    "gpuMemsetAsync (guards)");
}

bool DeviceBuffer::upload(const std::vector<unsigned char>& host, Reporter* rep) {
  if (bytes_ == 0) return true;
  return copied(rep, gpuMemcpyAsync(data(), host.data(), bytes_, gpuMemcpyHostToDevice, tBlock.stream()),
                "gpuMemcpyAsync H2D (inputs)");
}

bool DeviceBuffer::download(std::vector<unsigned char>* host, Reporter* rep) const {
  host->assign(bytes_, 0);
  if (bytes_ == 0) return true;
  return copied(rep, gpuMemcpyAsync(host->data(), data(), bytes_, gpuMemcpyDeviceToHost, tBlock.stream()),
                "gpuMemcpyAsync D2H (results)");
}

bool DeviceBuffer::fill(int byte, Reporter* rep) {
  return bytes_ == 0 || copied(rep, gpuMemsetAsync(data(), byte, bytes_, tBlock.stream()), "gpuMemsetAsync");
}

bool DeviceBuffer::guardsIntact(Reporter* rep) const {
  std::vector<unsigned char> front(kGuard + shift_), back(kGuard);
  if (!copied(rep, gpuMemcpyAsync(front.data(), base_, front.size(), gpuMemcpyDeviceToHost, tBlock.stream()),
              "gpuMemcpyAsync D2H (guards)") ||
      !copied(rep, gpuMemcpyAsync(back.data(), data() + bytes_, back.size(), gpuMemcpyDeviceToHost, tBlock.stream()),
              "gpuMemcpyAsync D2H (guards)"))
    return true;  // already reported
  for (unsigned char b : front)
    if (b != kGuardByte) return false;
  for (unsigned char b : back)
    if (b != kGuardByte) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// GpuCaseRun

namespace {

uint64_t fnv1a(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Compares `count` elements at out[offset..] with expect(i); reports the first few differences.
template <typename ExpectFn>
void checkRange(Reporter* rep, const std::string& label, const std::string& what, ncclDataType_t dtype,
                const std::vector<unsigned char>& out, size_t offset, size_t count, ExpectFn expect) {
  const size_t size = dtypeInfo(dtype).size;
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < count; ++i) {
    const Expect e = expect(i);
    const uint64_t got = loadBits(out.data(), offset + i, size);
    if (matches(dtype, e, got)) continue;
    if (++bad <= 3)
      first += " [" + std::to_string(offset + i) + "] got " + formatBits(dtype, got) + " expected " +
               describe(dtype, e) + ";";
  }
  if (bad) rep->failf("%s: %s: %zu of %zu elements wrong:%s", label.c_str(), what.c_str(), bad, count, first.c_str());
}

}  // namespace

// Buffer `a` is the send buffer, or the only one when in place; `b` the receive buffer otherwise.
// The layouts are those of the host-mode suite (coll_cases.cc), so both check the same contract.
struct GpuCaseRun::Impl {
  Impl(const CollCase& cc, int r, int n) : c(cc), rank(r), nranks(n), ref(cc, n), esize(dtypeInfo(cc.dtype).size) {}
  CollCase c;
  int rank, nranks;
  Reference ref;
  size_t esize;
  bool inPlace = false;
  std::vector<unsigned char> hostA, hostB;  // what was uploaded
  DeviceBuffer a, b;
  bool sendInB = false, recvInB = false;                   // which buffer each pointer is in...
  size_t sendOff = 0, recvOff = 0;                         // ...and at which element
  std::vector<size_t> scounts, sdispls, rcounts, rdispls;  // AlltoAllv, one-element gaps
  std::vector<size_t> vcounts, vdispls;                    // AllGatherv/ReduceScatterv (vcollLayout)
  size_t vextent = 0;
  ncclRedOp_t op = ncclSum;
  bool opCreated = false;
  alignas(8) unsigned char hostScalar[8] = {};
  DeviceBuffer devScalar;

  bool isRoot() const { return rank == c.root; }
  std::string label() const { return c.name() + " nranks=" + std::to_string(nranks) + " rank=" + std::to_string(rank); }
  void fillInput(std::vector<unsigned char>* v, size_t at, size_t n, size_t firstIdx) const {
    for (size_t i = 0; i < n; ++i) storeBits(v->data(), at + i, esize, ref.input(rank, firstIdx + i));
  }
  void fillJunk(std::vector<unsigned char>* v, size_t n) const {
    v->assign(n * esize, 0);
    for (size_t i = 0; i < n; ++i) storeBits(v->data(), i, esize, ref.junk(rank, i));
  }
  const void* sendPtr() const { return (sendInB ? b : a).data() + sendOff * esize; }
  void* recvPtr() const { return (recvInB ? b : a).data() + recvOff * esize; }
  void layout();
};

void GpuCaseRun::Impl::layout() {
  const size_t cnt = c.count, n = static_cast<size_t>(nranks), r = static_cast<size_t>(rank);
  inPlace = c.inPlace && !(c.evenRanksOnly && rank % 2 == 1);
  auto outOfPlace = [&](size_t sendElems, size_t recvElems) {
    fillJunk(&hostA, sendElems);
    fillInput(&hostA, 0, sendElems, 0);
    fillJunk(&hostB, recvElems);
    recvInB = true;
  };
  auto onlyBuffer = [&](size_t elems) { fillJunk(&hostA, elems); };
  switch (c.coll) {
    case Coll::kAllReduce:
    case Coll::kReduce:
      if (inPlace) {
        onlyBuffer(cnt);
        fillInput(&hostA, 0, cnt, 0);
      } else {
        outOfPlace(cnt, cnt);
      }
      break;
    case Coll::kBroadcast:
    case Coll::kBcast:
      if (inPlace || c.coll == Coll::kBcast) {
        onlyBuffer(cnt);
        if (isRoot()) fillInput(&hostA, 0, cnt, 0);
      } else {
        outOfPlace(cnt, cnt);  // non-roots' send buffers hold their own data: it must be ignored
      }
      break;
    case Coll::kAllGather:
    case Coll::kGather:
      if (inPlace && (c.coll == Coll::kAllGather || isRoot())) {
        onlyBuffer(n * cnt);
        fillInput(&hostA, r * cnt, cnt, 0);
        sendOff = r * cnt;
      } else {
        outOfPlace(cnt, n * cnt);
      }
      break;
    case Coll::kReduceScatter:
    case Coll::kScatter:
      if (inPlace && (c.coll == Coll::kReduceScatter || isRoot())) {
        onlyBuffer(n * cnt);
        fillInput(&hostA, 0, n * cnt, 0);
        recvOff = r * cnt;
      } else {
        outOfPlace(n * cnt, cnt);
      }
      break;
    case Coll::kAlltoAll: outOfPlace(n * cnt, n * cnt); break;
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
      fillJunk(&hostA, sTotal);
      fillJunk(&hostB, rTotal);
      recvInB = true;
      for (int p = 0; p < nranks; ++p) fillInput(&hostA, sdispls[p], scounts[p], static_cast<size_t>(p) * (cnt + 2));
      break;
    }
    case Coll::kAllGatherv:
      vextent = vcollLayout(cnt, nranks, &vcounts, &vdispls);
      if (inPlace) {
        onlyBuffer(vextent);
        fillInput(&hostA, vdispls[r], vcounts[r], 0);
        sendOff = vdispls[r];
      } else {
        outOfPlace(vcounts[r], vextent);
      }
      break;
    case Coll::kReduceScatterv:
      vextent = vcollLayout(cnt, nranks, &vcounts, &vdispls);
      if (inPlace) {
        onlyBuffer(vextent);
        fillInput(&hostA, 0, vextent, 0);
        recvOff = vdispls[r];
      } else {
        outOfPlace(vextent, vcounts[r]);
      }
      break;
  }
}

GpuCaseRun::GpuCaseRun(const CollCase& c, int rank, int nranks) : impl_(std::make_unique<Impl>(c, rank, nranks)) {}
GpuCaseRun::~GpuCaseRun() = default;
std::string GpuCaseRun::label() const { return impl_->label(); }

bool GpuCaseRun::setup(Reporter* rep) {
  Impl& m = *impl_;
  m.layout();
  const size_t shift = m.c.shifted ? m.esize : 0;  // aligned to the element size only
  if (!m.a.allocate(shift, m.hostA.size(), rep) || !m.a.upload(m.hostA, rep)) return false;
  if (m.recvInB && (!m.b.allocate(shift, m.hostB.size(), rep) || !m.b.upload(m.hostB, rep))) return false;
  return true;
}

bool GpuCaseRun::createOp(ncclComm_t comm, Reporter* rep) {
  Impl& m = *impl_;
  if (!collReduces(m.c.coll) || builtinRedOp(m.c.red, &m.op)) return true;
  const bool device = m.c.red == Red::kPreMulDev;
  storeBits(m.hostScalar, 0, m.esize, scalarBits(m.c.dtype, m.rank));
  void* scalar = m.hostScalar;
  if (device) {
    const std::vector<unsigned char> bytes(m.hostScalar, m.hostScalar + m.esize);
    if (!m.devScalar.allocate(0, m.esize, rep) || !m.devScalar.upload(bytes, rep)) return false;
    scalar = m.devScalar.data();
  }
  const ncclResult_t r = ncclRedOpCreatePreMulSum(&m.op, scalar, m.c.dtype,
                                                  device ? ncclScalarDevice : ncclScalarHostImmediate, comm);
  if (!rep->ok(r, (m.label() + ": ncclRedOpCreatePreMulSum").c_str(), comm)) return false;
  m.opCreated = true;
  if (!device) storeBits(m.hostScalar, 0, m.esize, wrongScalarBits(m.c.dtype));  // must have been copied
  return true;
}

bool GpuCaseRun::destroyOp(ncclComm_t comm, Reporter* rep) {
  Impl& m = *impl_;
  if (!m.opCreated) return true;
  m.opCreated = false;
  return rep->ok(ncclRedOpDestroy(m.op, comm), (m.label() + ": ncclRedOpDestroy").c_str(), comm);
}

ncclResult_t GpuCaseRun::issue(ncclComm_t comm, gpuStream_t s) const {
  const Impl& m = *impl_;
  const CollCase& c = m.c;
  const void* send = m.sendPtr();
  void* recv = m.recvPtr();
  switch (c.coll) {
    case Coll::kAllReduce: return ncclAllReduce(send, recv, c.count, c.dtype, m.op, comm, s);
    case Coll::kBroadcast: return ncclBroadcast(send, recv, c.count, c.dtype, c.root, comm, s);
    case Coll::kBcast: return ncclBcast(recv, c.count, c.dtype, c.root, comm, s);
    case Coll::kReduce: return ncclReduce(send, recv, c.count, c.dtype, m.op, c.root, comm, s);
    case Coll::kAllGather: return ncclAllGather(send, recv, c.count, c.dtype, comm, s);
    case Coll::kReduceScatter: return ncclReduceScatter(send, recv, c.count, c.dtype, m.op, comm, s);
    case Coll::kAlltoAll: return ncclAlltoAll(send, recv, c.count, c.dtype, comm, s);
    case Coll::kGather: return ncclGather(send, recv, c.count, c.dtype, c.root, comm, s);
    case Coll::kScatter: return ncclScatter(send, recv, c.count, c.dtype, c.root, comm, s);
    case Coll::kAlltoAllv:
      return ncclAlltoAllv(send, m.scounts.data(), m.sdispls.data(), recv, m.rcounts.data(), m.rdispls.data(), c.dtype,
                           comm, s);
    case Coll::kAllGatherv: return weftAllGatherv(send, recv, m.vcounts.data(), m.vdispls.data(), c.dtype, comm, s);
    case Coll::kReduceScatterv:
      return weftReduceScatterv(send, recv, m.vcounts.data(), m.vdispls.data(), c.dtype, m.op, comm, s);
  }
  return ncclInternalError;
}

void GpuCaseRun::verify(Reporter* rep) const {
  const Impl& m = *impl_;
  const CollCase& c = m.c;
  const size_t cnt = c.count;
  const int n = m.nranks, r = m.rank;
  const std::string label = m.label();
  std::vector<unsigned char> outA, outB;
  if (!m.a.download(&outA, rep)) return;
  if (m.recvInB && !m.b.download(&outB, rep)) return;
  const std::vector<unsigned char>& out = m.recvInB ? outB : outA;
  const size_t o = m.recvOff;  // the receive pointer's element offset in `out`
  auto input = [&](int src, size_t idx) { return exactly(m.ref.input(src, idx)); };
  auto reduced = [&](size_t idx) { return m.ref.reduced(idx); };
  auto blocks = [&](const char* what, auto expectOf) {
    for (int p = 0; p < n; ++p)
      checkRange(rep, label, what + std::to_string(p), c.dtype, out, o + p * cnt, cnt,
                 [&](size_t i) { return expectOf(p, i); });
  };
  switch (c.coll) {
    case Coll::kAllReduce:
      checkRange(rep, label, "result", c.dtype, out, o, cnt, reduced);
      rep->digest(c.name() + " nranks=" + std::to_string(n), fnv1a(out.data() + o * m.esize, cnt * m.esize));
      break;
    case Coll::kReduce:
      if (m.isRoot()) checkRange(rep, label, "result on the root", c.dtype, out, o, cnt, reduced);
      break;
    case Coll::kBroadcast:
    case Coll::kBcast:
      checkRange(rep, label, "broadcast data", c.dtype, out, o, cnt, [&](size_t i) { return input(c.root, i); });
      break;
    case Coll::kAllGather: blocks("block from rank ", [&](int p, size_t i) { return input(p, i); }); break;
    case Coll::kGather:
      if (m.isRoot()) blocks("block from rank ", [&](int p, size_t i) { return input(p, i); });
      break;
    case Coll::kReduceScatter:
      checkRange(rep, label, "result block", c.dtype, out, o, cnt, [&](size_t i) { return reduced(r * cnt + i); });
      break;
    case Coll::kScatter:
      checkRange(rep, label, "block from the root", c.dtype, out, o, cnt,
                 [&](size_t i) { return input(c.root, r * cnt + i); });
      break;
    case Coll::kAlltoAll: blocks("block from rank ", [&](int p, size_t i) { return input(p, r * cnt + i); }); break;
    case Coll::kAlltoAllv:
      for (int p = 0; p < n; ++p) {
        const size_t base = static_cast<size_t>(r) * (cnt + 2), gap = m.rdispls[p] + m.rcounts[p];
        checkRange(rep, label, "block from rank " + std::to_string(p), c.dtype, out, m.rdispls[p], m.rcounts[p],
                   [&](size_t i) { return input(p, base + i); });
        checkRange(rep, label, "gap between receive blocks", c.dtype, out, gap, 1,
                   [&](size_t) { return exactly(m.ref.junk(r, gap)); });
      }
      break;
    case Coll::kAllGatherv:
      for (int p = 0; p < n; ++p) {
        const size_t gap = m.vdispls[p] + m.vcounts[p];
        checkRange(rep, label, "block from rank " + std::to_string(p), c.dtype, out, m.vdispls[p], m.vcounts[p],
                   [&](size_t i) { return input(p, i); });
        // Gaps belong to no block: they keep what they held (the rank's own input, in place).
        checkRange(rep, label, "gap between blocks", c.dtype, out, gap, 1,
                   [&](size_t) { return exactly(m.ref.junk(r, gap)); });
      }
      break;
    case Coll::kReduceScatterv:
      checkRange(rep, label, "result block", c.dtype, out, o, m.vcounts[r],
                 [&](size_t i) { return reduced(m.vdispls[r] + i); });
      break;
  }
  // Out of place the send buffer is only read. In place, the parts of the only buffer that are
  // not output keep their input (Scatter's root, ReduceScatter's other blocks are not checked:
  // NCCL leaves the latter undefined).
  if (m.recvInB && outA != m.hostA)
    rep->failf("%s: the send buffer changed (an out-of-place collective must only read it)", label.c_str());
  if (c.coll == Coll::kScatter && !m.recvInB)
    checkRange(rep, label, "root's send buffer (in place)", c.dtype, outA, 0, n * cnt,
               [&](size_t i) { return input(r, i); });
  if (!m.a.guardsIntact(rep))
    rep->failf("%s: bytes just outside the %s buffer were overwritten", label.c_str(), m.recvInB ? "send" : "only");
  if (m.recvInB && !m.b.guardsIntact(rep))
    rep->failf("%s: bytes just outside the receive buffer were overwritten", label.c_str());
}

// ---------------------------------------------------------------------------------------------

bool runGpuCaseOnRank(const CollCase& c, ncclComm_t comm, gpuStream_t stream, int rank, int nranks, Reporter* rep) {
  GpuCaseRun run(c, rank, nranks);
  if (!run.setup(rep) || !run.createOp(comm, rep)) return false;
  rep->step(run.label());
  if (!rep->ok(run.issue(comm, stream), run.label().c_str(), comm)) return false;
  if (!gpuOk(rep, gpuStreamSynchronize(stream), (run.label() + ": gpuStreamSynchronize").c_str())) return false;
  run.verify(rep);
  return run.destroyOp(comm, rep);
}

bool runGpuCaseOnClique(const CollCase& c, const std::vector<ncclComm_t>& comms,
                        const std::vector<gpuStream_t>& streams, Reporter* rep) {
  const int n = static_cast<int>(comms.size());
  std::vector<std::unique_ptr<GpuCaseRun>> runs;
  for (int r = 0; r < n; ++r) {
    runs.push_back(std::make_unique<GpuCaseRun>(c, r, n));
    if (!runs.back()->setup(rep) || !runs.back()->createOp(comms[r], rep)) return false;
  }
  rep->step("group of " + c.name());
  bool ok = rep->ok(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; ok && r < n; ++r)
    ok = rep->ok(runs[r]->issue(comms[r], streams[r]), runs[r]->label().c_str(), comms[r]);
  const ncclResult_t end = ncclGroupEnd();
  if (!ok || !rep->ok(end, ("ncclGroupEnd after " + c.name()).c_str())) return false;
  for (int r = 0; r < n; ++r)
    if (!gpuOk(rep, gpuStreamSynchronize(streams[r]), "gpuStreamSynchronize")) return false;
  for (auto& run : runs) run->verify(rep);
  for (int r = 0; r < n; ++r) ok = runs[r]->destroyOp(comms[r], rep) && ok;
  return ok;
}

}  // namespace weft_test
