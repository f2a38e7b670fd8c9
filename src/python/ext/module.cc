// weft._weft: the extension module under the weft package (src/python/weft). It uses Weft only
// through the public C API; weft/__init__.py builds the Python-facing API on it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

#include "array_arg.h"
#include "comm.h"
#include "errors.h"
#include "weft/weft.h"

namespace py = pybind11;
using weft_py::Comm;

namespace {

py::bytes uniqueId() {
  ncclUniqueId id;
  ncclResult_t rc;
  {
    py::gil_scoped_release nogil;  // with NCCL_COMM_ID set, rank 0 may start serving a root here
    rc = ncclGetUniqueId(&id);
  }
  weft_py::check(rc, nullptr, "ncclGetUniqueId");
  return py::bytes(id.internal, NCCL_UNIQUE_ID_BYTES);
}

int version() {
  int v = 0;
  weft_py::check(ncclGetVersion(&v), nullptr, "ncclGetVersion");
  return v;
}

// ncclCommInitAll: len(outs) ranks of one communicator in this process, one per device in devlist;
// outs are fresh Comm objects (of the caller's Python class) that receive them.
void initAllInto(const py::list& outs, const py::object& devlist) {
  int ndev = static_cast<int>(outs.size());
  std::vector<int> devs;
  if (!devlist.is_none()) devs = devlist.cast<std::vector<int>>();
  if (!devs.empty() && static_cast<int>(devs.size()) != ndev) {
    throw py::value_error("weft: init_all: devlist has " + std::to_string(devs.size()) + " entries, ndev is " +
                          std::to_string(ndev));
  }
  std::vector<ncclComm_t> comms(outs.size(), nullptr);
  ncclResult_t rc;
  {
    py::gil_scoped_release nogil;
    rc = ncclCommInitAll(comms.data(), ndev, devs.empty() ? nullptr : devs.data());
  }
  weft_py::check(rc, nullptr, "ncclCommInitAll");
  for (size_t i = 0; i < comms.size(); ++i) outs[i].cast<Comm&>().adopt(comms[i]);
}

void addConstants(py::module_& m) {
  const std::pair<const char*, int> types[] = {
      {"INT8", ncclInt8},       {"UINT8", ncclUint8},       {"INT32", ncclInt32},     {"UINT32", ncclUint32},
      {"INT64", ncclInt64},     {"UINT64", ncclUint64},     {"FLOAT16", ncclFloat16}, {"FLOAT32", ncclFloat32},
      {"FLOAT64", ncclFloat64}, {"BFLOAT16", ncclBfloat16},
#ifdef weftComplex64
      // Weft's complex types, where this build's weft/weft.h has them.
      {"COMPLEX64", weftComplex64}, {"COMPLEX128", weftComplex128},
#endif
  };
  for (const auto& [name, value] : types) m.attr(name) = value;
  const std::pair<const char*, int> ops[] = {
      {"SUM", ncclSum}, {"PROD", ncclProd}, {"MAX", ncclMax}, {"MIN", ncclMin}, {"AVG", ncclAvg}};
  for (const auto& [name, value] : ops) m.attr(name) = value;
  m.attr("UNIQUE_ID_BYTES") = NCCL_UNIQUE_ID_BYTES;
  m.attr("NCCL_VERSION_CODE") = NCCL_VERSION_CODE;
}

}  // namespace

PYBIND11_MODULE(_weft, m) {
  m.doc() = "Weft's C API for Python (the extension under the weft package; see weft/__init__.py)";
  weft_py::addErrors(m);
  addConstants(m);

  m.def("get_unique_id", &uniqueId, "A new unique id (bytes) for rank 0 to hand to every rank.");
  m.def("get_version", &version, "ncclGetVersion: the NCCL API version code (22809 for 2.28.9).");
  m.def("version_string", &weftGetVersionString, "weftGetVersionString: Weft's version and backends.");
  m.def("group_start", &weft_py::groupStart);
  m.def("group_end", &weft_py::groupEnd);
  m.def("group_depth", &weft_py::groupDepth);
  m.def("dtype_size", &weft_py::dtypeSize);
  m.def("_init_all_into", &initAllInto, py::arg("outs"), py::arg("devlist") = py::none());
  m.def("_c_all_reduce_loop", &weft_py::cAllReduceLoop, py::arg("comm"), py::arg("sendbuf"), py::arg("recvbuf"),
        py::arg("iters"));

  auto none = py::none();
  py::class_<Comm>(m, "Comm", "One rank of a Weft communicator (use weft.Communicator).")
      .def(py::init<>())
      .def("_init_rank", &Comm::initRank, py::arg("nranks"), py::arg("unique_id"), py::arg("rank"))
      .def("_split_into", &Comm::splitInto, py::arg("out"), py::arg("color"), py::arg("key"))
      .def("destroy", &Comm::destroy, "ncclCommDestroy (a second call does nothing).")
      .def("finalize", &Comm::finalize, "ncclCommFinalize: finish the communicator's pending work.")
      .def("abort", &Comm::abort, "ncclCommAbort: stop now; peers' calls fail instead of waiting.")
      .def("async_error", &Comm::asyncError, "ncclCommGetAsyncError as an ncclResult_t code.")
      .def_property_readonly("valid", &Comm::valid)
      .def_property_readonly("rank", &Comm::rank)
      .def_property_readonly("size", &Comm::size)
      .def_property_readonly("device", &Comm::device)
      .def_property_readonly("host_mode", &Comm::hostMode)
      .def_property_readonly("backend", &Comm::backend)
      .def_property_readonly("handle", &Comm::handle, "The ncclComm_t as an integer.")
      .def("all_reduce", &Comm::allReduce, py::arg("sendbuf"), py::arg("recvbuf") = none, py::arg("op") = int(ncclSum),
           py::arg("stream") = none)
      .def("broadcast", &Comm::broadcast, py::arg("sendbuf"), py::arg("recvbuf") = none, py::arg("root") = 0,
           py::arg("stream") = none)
      .def("reduce", &Comm::reduce, py::arg("sendbuf"), py::arg("recvbuf") = none, py::arg("op") = int(ncclSum),
           py::arg("root") = 0, py::arg("stream") = none)
      .def("all_gather", &Comm::allGather, py::arg("sendbuf"), py::arg("recvbuf"), py::arg("stream") = none)
      .def("reduce_scatter", &Comm::reduceScatter, py::arg("sendbuf"), py::arg("recvbuf"), py::arg("op") = int(ncclSum),
           py::arg("stream") = none)
      .def("all_to_all", &Comm::allToAll, py::arg("sendbuf"), py::arg("recvbuf"), py::arg("stream") = none)
      .def("gather", &Comm::gather, py::arg("sendbuf"), py::arg("recvbuf") = none, py::arg("root") = 0,
           py::arg("stream") = none)
      .def("scatter", &Comm::scatter, py::arg("sendbuf"), py::arg("recvbuf"), py::arg("root") = 0,
           py::arg("stream") = none)
      .def("send", &Comm::send, py::arg("buf"), py::arg("peer"), py::arg("stream") = none)
      .def("recv", &Comm::recv, py::arg("buf"), py::arg("peer"), py::arg("stream") = none)
      .def("all_gather_v", &Comm::allGatherv, py::arg("sendbuf"), py::arg("recvbuf"), py::arg("counts"),
           py::arg("displs") = none, py::arg("stream") = none)
      .def("reduce_scatter_v", &Comm::reduceScatterv, py::arg("sendbuf"), py::arg("recvbuf"), py::arg("counts"),
           py::arg("displs") = none, py::arg("op") = int(ncclSum), py::arg("stream") = none)
      .def("ptr_all_reduce", &Comm::ptrAllReduce)
      .def("ptr_reduce", &Comm::ptrReduce)
      .def("ptr_broadcast", &Comm::ptrBroadcast)
      .def("ptr_all_gather", &Comm::ptrAllGather)
      .def("ptr_reduce_scatter", &Comm::ptrReduceScatter)
      .def("ptr_send", &Comm::ptrSend)
      .def("ptr_recv", &Comm::ptrRecv);
}
