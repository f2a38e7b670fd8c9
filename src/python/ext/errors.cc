#include "errors.h"

#include <array>

namespace weft_py {

namespace {

// One class per result code, made at import and never changed after: indexed by ncclResult_t.
std::array<PyObject*, ncclNumResults> gClasses{};

}  // namespace

void addErrors(py::module_& m) {
  py::dict attrs;
  attrs["__doc__"] = "A Weft call failed; .code is its ncclResult_t, the message is Weft's own.";
  attrs["code"] = static_cast<int>(ncclInternalError);
  PyObject* base = PyErr_NewException("weft.WeftError", PyExc_RuntimeError, attrs.ptr());
  if (base == nullptr) throw py::error_already_set();
  m.add_object("WeftError", py::reinterpret_borrow<py::object>(base));
  struct Sub {
    ncclResult_t code;
    const char* name;
    PyObject* extra;  // a second base class, so bad arguments are also ValueErrors
  };
  const Sub subs[] = {
      {ncclUnhandledCudaError, "WeftCudaError", nullptr},
      {ncclSystemError, "WeftSystemError", nullptr},
      {ncclInternalError, "WeftInternalError", nullptr},
      {ncclInvalidArgument, "WeftInvalidArgument", PyExc_ValueError},
      {ncclInvalidUsage, "WeftInvalidUsage", nullptr},
      {ncclRemoteError, "WeftRemoteError", nullptr},
      {ncclInProgress, "WeftInProgress", nullptr},
      {ncclTimeout, "WeftTimeout", PyExc_TimeoutError},
  };
  gClasses.fill(base);
  for (const Sub& s : subs) {
    py::dict d;
    d["code"] = static_cast<int>(s.code);
    py::tuple bases = s.extra ? py::make_tuple(py::handle(base), py::handle(s.extra))
                              : py::make_tuple(py::handle(base));
    std::string qual = std::string("weft.") + s.name;
    PyObject* cls = PyErr_NewException(qual.c_str(), bases.ptr(), d.ptr());
    if (cls == nullptr) throw py::error_already_set();
    m.add_object(s.name, py::reinterpret_borrow<py::object>(cls));
    gClasses[s.code] = cls;
  }
}

void raiseResult(ncclResult_t rc, ncclComm_t comm, const std::string& what) {
  std::string msg = "weft: " + what + " failed: " + ncclGetErrorString(rc);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && last[0] != '\0') msg += std::string(": ") + last;
  PyObject* cls = rc >= 0 && rc < ncclNumResults ? gClasses[rc] : gClasses[ncclInternalError];
  py::object err = py::reinterpret_borrow<py::object>(cls)(msg);
  err.attr("code") = static_cast<int>(rc);
  err.attr("message") = msg;
  PyErr_SetObject(cls, err.ptr());
  throw py::error_already_set();
}

}  // namespace weft_py
