#include "comm.h"

#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "errors.h"
#include "weft/weft.h"

namespace weft_py {

namespace {

// Arrays kept alive by the calls of this thread's open group (Weft's groups are per thread). Made
// on first use and never freed: a thread that exits inside a group must not drop Python
// references without the GIL.
struct GroupState {
  int depth = 0;
  std::vector<ArrayArg> keep;
};
GroupState& groupState() {
  thread_local GroupState* state = new GroupState();
  return *state;
}

std::string str(const char* what, const char* role) { return std::string("weft: ") + what + ": " + role; }

void sameType(const ArrayArg& a, const ArrayArg& b, const char* what) {
  if (a.dtype != b.dtype) {
    throw py::type_error(str(what, "recvbuf has dtype ") + dtypeName(b.dtype) + " but sendbuf has " +
                         dtypeName(a.dtype) + ": Weft does not convert types");
  }
}

void needCount(const ArrayArg& a, size_t need, const char* what, const char* role, const std::string& why) {
  if (a.count < need) {
    throw py::value_error(str(what, role) + " holds " + std::to_string(a.count) + " elements, needs " +
                          std::to_string(need) + " (" + why + ")");
  }
}

void divisible(const ArrayArg& a, int n, const char* what) {
  if (a.count % static_cast<size_t>(n) != 0) {
    throw py::value_error(str(what, "sendbuf") + " holds " + std::to_string(a.count) +
                          " elements, not a multiple of the " + std::to_string(n) + " ranks");
  }
}

std::vector<size_t> sizeList(const py::object& obj, int n, const char* what, const char* name) {
  std::vector<size_t> out;
  for (py::handle h : obj) {
    long long v = h.cast<long long>();
    if (v < 0) throw py::value_error(str(what, name) + " holds a negative value");
    out.push_back(static_cast<size_t>(v));
  }
  if (out.size() != static_cast<size_t>(n)) {
    throw py::value_error(str(what, name) + " has " + std::to_string(out.size()) + " entries, the communicator " +
                          std::to_string(n) + " ranks");
  }
  return out;
}

// displs defaults to the blocks packed one after the other; returns max(displs + counts).
size_t vLayout(const std::vector<size_t>& counts, std::vector<size_t>& displs) {
  size_t end = 0;
  if (displs.empty()) {
    for (size_t c : counts) {
      displs.push_back(end);
      end += c;
    }
    return end;
  }
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] != 0 && displs[r] + counts[r] > end) end = displs[r] + counts[r];
  }
  return end;
}

WEFT_STREAM_T asStream(uintptr_t s) { return reinterpret_cast<WEFT_STREAM_T>(s); }
void* asPtr(uintptr_t p) { return reinterpret_cast<void*>(p); }

}  // namespace

Comm::~Comm() {
  if (comm_ == nullptr) return;
  // A communicator dropped without destroy(): free it (ncclCommDestroy involves no peer). The GIL
  // is let go by hand: a destructor must not throw, and nothing here can.
  ncclComm_t c = std::exchange(comm_, nullptr);
  PyThreadState* state = PyEval_SaveThread();
  ncclCommDestroy(c);
  PyEval_RestoreThread(state);
}

ncclComm_t Comm::get() const {
  if (comm_ == nullptr) {
    throw py::value_error("weft: the communicator was destroyed or aborted (or never made)");
  }
  return comm_;
}

void Comm::readShape() {
  check(ncclCommUserRank(comm_, &rank_), comm_, "ncclCommUserRank");
  check(ncclCommCount(comm_, &size_), comm_, "ncclCommCount");
  int host = 1;
  check(weftCommIsHostMode(comm_, &host), comm_, "weftCommIsHostMode");
  host_ = host != 0;
}

void Comm::initRank(int nranks, const py::bytes& id, int rank) {
  if (comm_ != nullptr) throw py::value_error("weft: this communicator is already initialized");
  std::string raw = id;
  if (raw.size() != NCCL_UNIQUE_ID_BYTES) {
    throw py::value_error("weft: a unique id has " + std::to_string(NCCL_UNIQUE_ID_BYTES) + " bytes, not " +
                          std::to_string(raw.size()));
  }
  ncclUniqueId uid;
  std::memcpy(uid.internal, raw.data(), NCCL_UNIQUE_ID_BYTES);
  ncclComm_t c = nullptr;
  ncclResult_t rc;
  {
    py::gil_scoped_release nogil;  // the rendezvous waits for every rank
    rc = ncclCommInitRank(&c, nranks, uid, rank);
  }
  check(rc, nullptr, "ncclCommInitRank");
  adopt(c);
}

void Comm::adopt(ncclComm_t comm) {
  comm_ = comm;
  readShape();
}

void Comm::splitInto(Comm& out, const py::object& color, const py::object& key) {
  int col = color.is_none() ? NCCL_SPLIT_NOCOLOR : color.cast<int>();
  int k = key.is_none() ? rank_ : key.cast<int>();
  ncclComm_t parent = get(), child = nullptr;
  ncclResult_t rc;
  {
    py::gil_scoped_release nogil;
    rc = ncclCommSplit(parent, col, k, &child, nullptr);
  }
  check(rc, parent, "ncclCommSplit");
  if (child != nullptr) out.adopt(child);
}

void Comm::destroy() {
  if (comm_ == nullptr) return;
  ncclComm_t c = std::exchange(comm_, nullptr);
  ncclResult_t rc;
  {
    py::gil_scoped_release nogil;
    rc = ncclCommDestroy(c);
  }
  check(rc, nullptr, "ncclCommDestroy");
}

void Comm::finalize() {
  ncclComm_t c = get();
  ncclResult_t rc;
  {
    py::gil_scoped_release nogil;
    rc = ncclCommFinalize(c);
  }
  check(rc, c, "ncclCommFinalize");
}

void Comm::abort() {
  if (comm_ == nullptr) return;
  ncclComm_t c = std::exchange(comm_, nullptr);
  ncclResult_t rc;
  {
    py::gil_scoped_release nogil;
    rc = ncclCommAbort(c);
  }
  check(rc, nullptr, "ncclCommAbort");
}

int Comm::asyncError() {
  ncclResult_t err = ncclSuccess;
  check(ncclCommGetAsyncError(get(), &err), comm_, "ncclCommGetAsyncError");
  return err;
}

int Comm::device() const {
  int dev = -1;
  check(ncclCommCuDevice(get(), &dev), comm_, "ncclCommCuDevice");
  return dev;
}

const char* Comm::backend() const {
  const char* name = nullptr;
  check(weftCommGetBackend(get(), &name), comm_, "weftCommGetBackend");
  return name;
}

void Comm::checkPlace(const ArrayArg& a, const char* role) const {
  if (host_ && a.device) {
    throw py::value_error(std::string("weft: ") + role + " is GPU memory (" + a.kind +
                          "), but this communicator runs in host mode: pass host arrays (NumPy)");
  }
  if (!host_ && !a.device) {
    throw py::value_error(std::string("weft: ") + role +
                          " is host memory, but this communicator runs on a GPU: pass GPU arrays (CuPy, torch)");
  }
}

WEFT_STREAM_T Comm::streamOf(const ArrayArg& a, const py::object& stream) const {
  if (host_) return nullptr;  // host mode runs on the calling thread; it takes no stream
  if (!stream.is_none()) return asStream(stream.cast<uintptr_t>());
  return asStream(a.stream);
}

void Comm::checkRoot(int root, const char* what) const {
  // Weft checks the root too; checking here spares a half-made call on some ranks.
  if (root < 0 || root >= size_) {
    throw py::value_error(str(what, "root ") + std::to_string(root) + " is not a rank of this " +
                          std::to_string(size_) + "-rank communicator");
  }
}

template <class Call>
void Comm::run(const char* what, Call&& call, ArrayArg* a, ArrayArg* b) {
  ncclResult_t rc;
  {
    py::gil_scoped_release nogil;
    rc = call();
  }
  if (rc != ncclSuccess) raiseResult(rc, comm_, what);
  GroupState& g = groupState();
  if (g.depth > 0) {
    if (a != nullptr) g.keep.push_back(std::move(*a));
    if (b != nullptr) g.keep.push_back(std::move(*b));
  }
}

// Each collective reads its arguments, checks them against each other and the communicator, then
// calls Weft. An omitted recvbuf means in place (recvbuf = sendbuf), as NCCL allows.
py::object Comm::allReduce(const py::object& send, const py::object& recv, int op, const py::object& stream) {
  ncclComm_t c = get();
  bool inPlace = recv.is_none() || recv.is(send);
  ArrayArg s = toArray(send, "sendbuf", inPlace);
  checkPlace(s, "sendbuf");
  std::optional<ArrayArg> r;
  if (!inPlace) {
    r.emplace(toArray(recv, "recvbuf", true));
    checkPlace(*r, "recvbuf");
    sameType(s, *r, "all_reduce");
    needCount(*r, s.count, "all_reduce", "recvbuf", "as many as sendbuf");
  }
  void* out = r ? r->ptr : s.ptr;
  WEFT_STREAM_T st = streamOf(s, stream);
  run(
      "ncclAllReduce",
      [&] { return ncclAllReduce(s.ptr, out, s.count, ncclDataType_t(s.dtype), ncclRedOp_t(op), c, st); }, &s,
      r ? &*r : nullptr);
  return inPlace ? send : recv;
}

py::object Comm::broadcast(const py::object& send, const py::object& recv, int root, const py::object& stream) {
  ncclComm_t c = get();
  checkRoot(root, "broadcast");
  bool inPlace = recv.is_none() || recv.is(send);
  ArrayArg s = toArray(send, "sendbuf", inPlace);
  checkPlace(s, "sendbuf");
  std::optional<ArrayArg> r;
  size_t count = s.count;
  if (!inPlace) {
    r.emplace(toArray(recv, "recvbuf", true));
    checkPlace(*r, "recvbuf");
    sameType(s, *r, "broadcast");
    count = r->count;  // every rank receives recvbuf's size; the root's sendbuf must hold as many
    if (rank_ == root) needCount(s, count, "broadcast", "sendbuf", "as many as recvbuf");
  }
  void* out = r ? r->ptr : s.ptr;
  WEFT_STREAM_T st = streamOf(s, stream);
  run(
      "ncclBroadcast", [&] { return ncclBroadcast(s.ptr, out, count, ncclDataType_t(s.dtype), root, c, st); }, &s,
      r ? &*r : nullptr);
  return inPlace ? send : recv;
}

py::object Comm::reduce(const py::object& send, const py::object& recv, int op, int root, const py::object& stream) {
  ncclComm_t c = get();
  checkRoot(root, "reduce");
  // Only the root writes: elsewhere recvbuf may be omitted (and is then never touched).
  bool inPlace = recv.is_none() || recv.is(send);
  ArrayArg s = toArray(send, "sendbuf", inPlace && rank_ == root);
  checkPlace(s, "sendbuf");
  std::optional<ArrayArg> r;
  if (!inPlace) {
    r.emplace(toArray(recv, "recvbuf", rank_ == root));
    checkPlace(*r, "recvbuf");
    sameType(s, *r, "reduce");
    if (rank_ == root) needCount(*r, s.count, "reduce", "recvbuf", "as many as sendbuf");
  }
  void* out = r ? r->ptr : s.ptr;
  WEFT_STREAM_T st = streamOf(s, stream);
  run(
      "ncclReduce",
      [&] { return ncclReduce(s.ptr, out, s.count, ncclDataType_t(s.dtype), ncclRedOp_t(op), root, c, st); }, &s,
      r ? &*r : nullptr);
  return inPlace ? send : recv;
}

py::object Comm::allGather(const py::object& send, const py::object& recv, const py::object& stream) {
  ncclComm_t c = get();
  ArrayArg s = toArray(send, "sendbuf", false);
  ArrayArg r = toArray(recv, "recvbuf", true);
  checkPlace(s, "sendbuf");
  checkPlace(r, "recvbuf");
  sameType(s, r, "all_gather");
  needCount(r, s.count * size_, "all_gather", "recvbuf", "sendbuf's size x ranks");
  WEFT_STREAM_T st = streamOf(s, stream);
  run(
      "ncclAllGather", [&] { return ncclAllGather(s.ptr, r.ptr, s.count, ncclDataType_t(s.dtype), c, st); }, &s, &r);
  return recv;
}

py::object Comm::reduceScatter(const py::object& send, const py::object& recv, int op, const py::object& stream) {
  ncclComm_t c = get();
  ArrayArg s = toArray(send, "sendbuf", false);
  ArrayArg r = toArray(recv, "recvbuf", true);
  checkPlace(s, "sendbuf");
  checkPlace(r, "recvbuf");
  sameType(s, r, "reduce_scatter");
  divisible(s, size_, "reduce_scatter");
  size_t count = s.count / size_;
  needCount(r, count, "reduce_scatter", "recvbuf", "sendbuf's size / ranks");
  WEFT_STREAM_T st = streamOf(s, stream);
  run(
      "ncclReduceScatter",
      [&] { return ncclReduceScatter(s.ptr, r.ptr, count, ncclDataType_t(s.dtype), ncclRedOp_t(op), c, st); }, &s, &r);
  return recv;
}

py::object Comm::allToAll(const py::object& send, const py::object& recv, const py::object& stream) {
  ncclComm_t c = get();
  ArrayArg s = toArray(send, "sendbuf", false);
  ArrayArg r = toArray(recv, "recvbuf", true);
  checkPlace(s, "sendbuf");
  checkPlace(r, "recvbuf");
  sameType(s, r, "all_to_all");
  divisible(s, size_, "all_to_all");
  needCount(r, s.count, "all_to_all", "recvbuf", "as many as sendbuf");
  size_t count = s.count / size_;
  WEFT_STREAM_T st = streamOf(s, stream);
  run(
      "ncclAlltoAll", [&] { return ncclAlltoAll(s.ptr, r.ptr, count, ncclDataType_t(s.dtype), c, st); }, &s, &r);
  return recv;
}

py::object Comm::gather(const py::object& send, const py::object& recv, int root, const py::object& stream) {
  ncclComm_t c = get();
  checkRoot(root, "gather");
  ArrayArg s = toArray(send, "sendbuf", false);
  checkPlace(s, "sendbuf");
  std::optional<ArrayArg> r;
  if (rank_ == root) {
    if (recv.is_none()) throw py::value_error("weft: gather: the root needs a recvbuf");
    r.emplace(toArray(recv, "recvbuf", true));
    checkPlace(*r, "recvbuf");
    sameType(s, *r, "gather");
    needCount(*r, s.count * size_, "gather", "recvbuf", "sendbuf's size x ranks");
  }
  void* out = r ? r->ptr : nullptr;
  WEFT_STREAM_T st = streamOf(s, stream);
  run(
      "ncclGather", [&] { return ncclGather(s.ptr, out, s.count, ncclDataType_t(s.dtype), root, c, st); }, &s,
      r ? &*r : nullptr);
  return recv;
}

py::object Comm::scatter(const py::object& send, const py::object& recv, int root, const py::object& stream) {
  ncclComm_t c = get();
  checkRoot(root, "scatter");
  ArrayArg r = toArray(recv, "recvbuf", true);
  checkPlace(r, "recvbuf");
  std::optional<ArrayArg> s;
  if (rank_ == root) {
    if (send.is_none()) throw py::value_error("weft: scatter: the root needs a sendbuf");
    s.emplace(toArray(send, "sendbuf", false));
    checkPlace(*s, "sendbuf");
    sameType(*s, r, "scatter");
    needCount(*s, r.count * size_, "scatter", "sendbuf", "recvbuf's size x ranks");
  }
  const void* in = s ? s->ptr : nullptr;
  WEFT_STREAM_T st = streamOf(r, stream);
  run(
      "ncclScatter", [&] { return ncclScatter(in, r.ptr, r.count, ncclDataType_t(r.dtype), root, c, st); }, &r,
      s ? &*s : nullptr);
  return recv;
}

void Comm::send(const py::object& buf, int peer, const py::object& stream) {
  ncclComm_t c = get();
  ArrayArg b = toArray(buf, "sendbuf", false);
  checkPlace(b, "sendbuf");
  WEFT_STREAM_T st = streamOf(b, stream);
  run(
      "ncclSend", [&] { return ncclSend(b.ptr, b.count, ncclDataType_t(b.dtype), peer, c, st); }, &b, nullptr);
}

py::object Comm::recv(const py::object& buf, int peer, const py::object& stream) {
  ncclComm_t c = get();
  ArrayArg b = toArray(buf, "recvbuf", true);
  checkPlace(b, "recvbuf");
  WEFT_STREAM_T st = streamOf(b, stream);
  run(
      "ncclRecv", [&] { return ncclRecv(b.ptr, b.count, ncclDataType_t(b.dtype), peer, c, st); }, &b, nullptr);
  return buf;
}

py::object Comm::allGatherv(const py::object& send, const py::object& recv, const py::object& counts,
                            const py::object& displs, const py::object& stream) {
  ncclComm_t c = get();
  std::vector<size_t> cnt = sizeList(counts, size_, "all_gather_v", "counts");
  std::vector<size_t> dis = displs.is_none() ? std::vector<size_t>()
                                             : sizeList(displs, size_, "all_gather_v", "displs");
  size_t end = vLayout(cnt, dis);
  ArrayArg s = toArray(send, "sendbuf", false);
  ArrayArg r = toArray(recv, "recvbuf", true);
  checkPlace(s, "sendbuf");
  checkPlace(r, "recvbuf");
  sameType(s, r, "all_gather_v");
  needCount(s, cnt[rank_], "all_gather_v", "sendbuf", "counts[rank]");
  needCount(r, end, "all_gather_v", "recvbuf", "max(displs + counts)");
  WEFT_STREAM_T st = streamOf(s, stream);
  run(
      "weftAllGatherv",
      [&] { return weftAllGatherv(s.ptr, r.ptr, cnt.data(), dis.data(), ncclDataType_t(s.dtype), c, st); }, &s, &r);
  return recv;
}

py::object Comm::reduceScatterv(const py::object& send, const py::object& recv, const py::object& counts,
                                const py::object& displs, int op, const py::object& stream) {
  ncclComm_t c = get();
  std::vector<size_t> cnt = sizeList(counts, size_, "reduce_scatter_v", "counts");
  std::vector<size_t> dis = displs.is_none() ? std::vector<size_t>()
                                             : sizeList(displs, size_, "reduce_scatter_v", "displs");
  size_t end = vLayout(cnt, dis);
  ArrayArg s = toArray(send, "sendbuf", false);
  ArrayArg r = toArray(recv, "recvbuf", true);
  checkPlace(s, "sendbuf");
  checkPlace(r, "recvbuf");
  sameType(s, r, "reduce_scatter_v");
  needCount(s, end, "reduce_scatter_v", "sendbuf", "max(displs + counts)");
  needCount(r, cnt[rank_], "reduce_scatter_v", "recvbuf", "counts[rank]");
  WEFT_STREAM_T st = streamOf(s, stream);
  run(
      "weftReduceScatterv",
      [&] {
        return weftReduceScatterv(s.ptr, r.ptr, cnt.data(), dis.data(), ncclDataType_t(s.dtype), ncclRedOp_t(op), c,
                                  st);
      },
      &s, &r);
  return recv;
}

void Comm::ptrAllReduce(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, uintptr_t stream) {
  ncclComm_t c = get();
  run(
      "ncclAllReduce",
      [&] {
        return ncclAllReduce(asPtr(send), asPtr(recv), count, ncclDataType_t(dtype), ncclRedOp_t(op), c,
                             asStream(stream));
      },
      nullptr, nullptr);
}

void Comm::ptrReduce(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, int root, uintptr_t stream) {
  ncclComm_t c = get();
  run(
      "ncclReduce",
      [&] {
        return ncclReduce(asPtr(send), asPtr(recv), count, ncclDataType_t(dtype), ncclRedOp_t(op), root, c,
                          asStream(stream));
      },
      nullptr, nullptr);
}

void Comm::ptrBroadcast(uintptr_t send, uintptr_t recv, size_t count, int dtype, int root, uintptr_t stream) {
  ncclComm_t c = get();
  run(
      "ncclBroadcast",
      [&] { return ncclBroadcast(asPtr(send), asPtr(recv), count, ncclDataType_t(dtype), root, c, asStream(stream)); },
      nullptr, nullptr);
}

void Comm::ptrAllGather(uintptr_t send, uintptr_t recv, size_t count, int dtype, uintptr_t stream) {
  ncclComm_t c = get();
  run(
      "ncclAllGather",
      [&] { return ncclAllGather(asPtr(send), asPtr(recv), count, ncclDataType_t(dtype), c, asStream(stream)); },
      nullptr, nullptr);
}

void Comm::ptrReduceScatter(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, uintptr_t stream) {
  ncclComm_t c = get();
  run(
      "ncclReduceScatter",
      [&] {
        return ncclReduceScatter(asPtr(send), asPtr(recv), count, ncclDataType_t(dtype), ncclRedOp_t(op), c,
                                 asStream(stream));
      },
      nullptr, nullptr);
}

void Comm::ptrSend(uintptr_t send, size_t count, int dtype, int peer, uintptr_t stream) {
  ncclComm_t c = get();
  run(
      "ncclSend", [&] { return ncclSend(asPtr(send), count, ncclDataType_t(dtype), peer, c, asStream(stream)); },
      nullptr, nullptr);
}

void Comm::ptrRecv(uintptr_t recv, size_t count, int dtype, int peer, uintptr_t stream) {
  ncclComm_t c = get();
  run(
      "ncclRecv", [&] { return ncclRecv(asPtr(recv), count, ncclDataType_t(dtype), peer, c, asStream(stream)); },
      nullptr, nullptr);
}

void groupStart() {
  check(ncclGroupStart(), nullptr, "ncclGroupStart");
  ++groupState().depth;
}

void groupEnd() {
  GroupState& g = groupState();
  if (g.depth == 0) throw py::value_error("weft: group_end without group_start");
  ncclResult_t rc;
  {
    py::gil_scoped_release nogil;
    rc = ncclGroupEnd();
  }
  // The group is over either way: Weft ran or dropped its operations, so the arrays may go.
  if (--g.depth == 0) g.keep.clear();
  check(rc, nullptr, "ncclGroupEnd");
}

int groupDepth() { return groupState().depth; }

int64_t cAllReduceLoop(Comm& comm, const py::object& send, const py::object& recv, int iters) {
  ncclComm_t c = comm.get();
  ArrayArg s = toArray(send, "sendbuf", false);
  ArrayArg r = toArray(recv, "recvbuf", true);
  needCount(r, s.count, "c_all_reduce_loop", "recvbuf", "as many as sendbuf");
  ncclResult_t rc = ncclSuccess;
  std::chrono::steady_clock::duration took{};
  {
    py::gil_scoped_release nogil;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters && rc == ncclSuccess; ++i) {
      rc = ncclAllReduce(s.ptr, r.ptr, s.count, ncclDataType_t(s.dtype), ncclSum, c, nullptr);
    }
    took = std::chrono::steady_clock::now() - start;
  }
  check(rc, c, "ncclAllReduce");
  return std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
}

}  // namespace weft_py
