// Weft's result codes as Python exceptions: weft.WeftError (a RuntimeError) and one subclass per
// ncclResult_t, each carrying the code (.code) and Weft's own message (ncclGetLastError).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "nccl.h"

namespace weft_py {

namespace py = pybind11;

// Creates the exception classes in module m (once, at import).
void addErrors(py::module_& m);

// Raises the exception for rc (not ncclSuccess): "weft: <what> failed: <error string>: <last error>".
[[noreturn]] void raiseResult(ncclResult_t rc, ncclComm_t comm, const std::string& what);

inline void check(ncclResult_t rc, ncclComm_t comm, const char* what) {
  if (rc != ncclSuccess) raiseResult(rc, comm, what);
}

}  // namespace weft_py
