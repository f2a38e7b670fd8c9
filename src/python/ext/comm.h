// weft._weft.Comm: one Weft communicator, its collectives on arrays (sizes and types checked
// before C is called, the GIL released while Weft runs) and on raw pointers (for weft.nccl).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "array_arg.h"
#include "nccl.h"

namespace weft_py {

class Comm {
 public:
  Comm() = default;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm();

  void initRank(int nranks, const py::bytes& id, int rank);
  void adopt(ncclComm_t comm);  // takes ownership of a communicator C made (split, init_all)
  void splitInto(Comm& out, const py::object& color, const py::object& key);
  void destroy();
  void finalize();
  void abort();
  int asyncError();

  bool valid() const { return comm_ != nullptr; }
  ncclComm_t get() const;  // raises once destroyed or aborted
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool hostMode() const { return host_; }
  int device() const;
  const char* backend() const;
  uintptr_t handle() const { return reinterpret_cast<uintptr_t>(comm_); }

  // Collectives on arrays; each returns its result array.
  py::object allReduce(const py::object& send, const py::object& recv, int op, const py::object& stream);
  py::object broadcast(const py::object& send, const py::object& recv, int root, const py::object& stream);
  py::object reduce(const py::object& send, const py::object& recv, int op, int root, const py::object& stream);
  py::object allGather(const py::object& send, const py::object& recv, const py::object& stream);
  py::object reduceScatter(const py::object& send, const py::object& recv, int op, const py::object& stream);
  py::object allToAll(const py::object& send, const py::object& recv, const py::object& stream);
  py::object gather(const py::object& send, const py::object& recv, int root, const py::object& stream);
  py::object scatter(const py::object& send, const py::object& recv, int root, const py::object& stream);
  void send(const py::object& buf, int peer, const py::object& stream);
  py::object recv(const py::object& buf, int peer, const py::object& stream);
  py::object allGatherv(const py::object& send, const py::object& recv, const py::object& counts,
                        const py::object& displs, const py::object& stream);
  py::object reduceScatterv(const py::object& send, const py::object& recv, const py::object& counts,
                            const py::object& displs, int op, const py::object& stream);

  // The same on raw addresses, counts and type codes, as cupy.cuda.nccl takes them.
  void ptrAllReduce(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, uintptr_t stream);
  void ptrReduce(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, int root, uintptr_t stream);
  void ptrBroadcast(uintptr_t send, uintptr_t recv, size_t count, int dtype, int root, uintptr_t stream);
  void ptrAllGather(uintptr_t send, uintptr_t recv, size_t count, int dtype, uintptr_t stream);
  void ptrReduceScatter(uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, uintptr_t stream);
  void ptrSend(uintptr_t send, size_t count, int dtype, int peer, uintptr_t stream);
  void ptrRecv(uintptr_t recv, size_t count, int dtype, int peer, uintptr_t stream);

 private:
  void readShape();
  void checkPlace(const ArrayArg& a, const char* role) const;
  WEFT_STREAM_T streamOf(const ArrayArg& a, const py::object& stream) const;
  void checkRoot(int root, const char* what) const;
  // Runs call with the GIL released and raises on failure; inside a group, keeps the arrays alive
  // until the group ends (the call has only queued the operation).
  template <class Call>
  void run(const char* what, Call&& call, ArrayArg* a, ArrayArg* b);

  ncclComm_t comm_ = nullptr;
  int rank_ = -1;
  int size_ = 0;
  bool host_ = true;
};

// ncclGroupStart/End for this thread; the end releases the arrays the group's calls kept.
void groupStart();
void groupEnd();
int groupDepth();

// A C loop of iters ncclAllReduce calls on the arrays, with the GIL released: the time of the
// same call made from C, for benchmarks/python_overhead.py. Returns the loop's nanoseconds.
int64_t cAllReduceLoop(Comm& comm, const py::object& send, const py::object& recv, int iters);

}  // namespace weft_py
