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

// Comm.all_reduce as a plain CPython method (vectorcall), not through pybind11's dispatcher: the
// small-message AllReduce is the call whose Python overhead is budgeted (2 us over C,
// benchmarks/python_overhead.py), and the dispatcher's generic argument handling is a good part of
// it. Same arguments and behaviour as the other methods: (sendbuf, recvbuf=None, op=SUM, stream=None).
PyObject* fastAllReduce(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const kNames[] = {"sendbuf", "recvbuf", "op", "stream"};
  constexpr Py_ssize_t kMax = 4;
  PyObject* vals[kMax] = {nullptr, Py_None, nullptr, Py_None};
  if (nargs > kMax) {
    PyErr_Format(PyExc_TypeError, "all_reduce() takes at most %d arguments (%zd given)", int(kMax), nargs);
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) vals[i] = args[i];
  Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    Py_ssize_t at = 0;
    while (at < kMax && PyUnicode_CompareWithASCIIString(key, kNames[at]) != 0) ++at;
    if (at == kMax || at < nargs) {
      PyErr_Format(PyExc_TypeError, "all_reduce() got an unexpected or repeated argument '%U'", key);
      return nullptr;
    }
    vals[at] = args[nargs + k];
  }
  if (vals[0] == nullptr) {
    PyErr_SetString(PyExc_TypeError, "all_reduce() missing required argument 'sendbuf'");
    return nullptr;
  }
  int op = ncclSum;
  if (vals[2] != nullptr) {
    op = static_cast<int>(PyLong_AsLong(vals[2]));
    if (op == -1 && PyErr_Occurred()) return nullptr;
  }
  try {
    Comm& comm = py::handle(self).cast<Comm&>();
    auto arg = [](PyObject* o) { return py::reinterpret_borrow<py::object>(o); };
    return comm.allReduce(arg(vals[0]), arg(vals[1]), op, arg(vals[3])).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (py::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyMethodDef gFastAllReduce = {
    "all_reduce", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(fastAllReduce)),
    METH_FASTCALL | METH_KEYWORDS,
    "all_reduce(sendbuf, recvbuf=None, op=SUM, stream=None): ncclAllReduce; recvbuf omitted means in place."};

void addConstants(py::module_& m) {
  const std::pair<const char*, int> types[] = {
      {"INT8", ncclInt8},
      {"UINT8", ncclUint8},
      {"INT32", ncclInt32},
      {"UINT32", ncclUint32},
      {"INT64", ncclInt64},
      {"UINT64", ncclUint64},
      {"FLOAT16", ncclFloat16},
      {"FLOAT32", ncclFloat32},
      {"FLOAT64", ncclFloat64},
      {"BFLOAT16", ncclBfloat16},
#ifdef weftComplex64
      // Weft's complex types, where this build's weft/weft.h has them.
      {"COMPLEX64", weftComplex64},
      {"COMPLEX128", weftComplex128},
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
  weft_py::initNumpy();
  addConstants(m);

  m.def("get_unique_id", &uniqueId, "A new unique id (bytes) for rank 0 to hand to every rank.");
  m.def("get_version", &version, "ncclGetVersion: the NCCL API version code (23007 for 2.30.7).");
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
  py::object cls = m.attr("Comm");
  PyObject* method = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), &gFastAllReduce);
  if (method == nullptr) throw py::error_already_set();
  cls.attr("all_reduce") = py::reinterpret_steal<py::object>(method);
}
