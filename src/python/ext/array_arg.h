// An array argument of a Python call, seen as Weft needs it: one contiguous block of elements of
// one Weft data type, in host or GPU memory. Built from the buffer protocol (NumPy and anything
// else that exports one), __cuda_array_interface__ (CuPy, Numba, PyTorch on a GPU) or DLPack.
// Weft never copies: a strided view is an error, not a silent copy.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"

namespace weft_py {

namespace py = pybind11;

class ArrayArg {
 public:
  ArrayArg() = default;
  ArrayArg(const ArrayArg&) = delete;
  ArrayArg& operator=(const ArrayArg&) = delete;
  ArrayArg(ArrayArg&& other) noexcept;
  ArrayArg& operator=(ArrayArg&& other) = delete;
  ~ArrayArg();

  void* ptr = nullptr;
  size_t count = 0;     // elements
  size_t itemSize = 0;  // bytes per element
  int dtype = -1;       // an ncclDataType_t value (Weft's complex types included)
  bool device = false;  // GPU memory (__cuda_array_interface__ or a GPU DLPack tensor)
  bool hasStream = false;
  uintptr_t stream = 0;  // the stream the array's library works on (GPU arrays only)
  std::string kind;      // how the memory was found, for messages: "buffer", "cuda_array_interface", "dlpack"

  size_t bytes() const { return count * itemSize; }

 private:
  friend ArrayArg toArray(py::handle obj, const char* role, bool writable);
  friend bool fromNumpy(ArrayArg& a, py::handle obj, const char* role, bool writable);
  Py_buffer view_{};
  bool hasView_ = false;
  py::object keep_;  // the DLPack capsule or the object whose interface was read
};

// Reads obj as an array; role names the argument in messages ("sendbuf"). Raises TypeError for
// something that is not an array or has a type Weft does not reduce, ValueError for a strided or
// (when writable) read-only one.
ArrayArg toArray(py::handle obj, const char* role, bool writable);

// Loads NumPy's C API when the build has it (WEFT_PY_NUMPY) and NumPy imports: NumPy arrays are
// then read directly. Called once, at import.
void initNumpy();

// The element size of an ncclDataType_t Weft supports, 0 for any other value.
size_t dtypeSize(int dtype);

// "float32", "complex64", ...: the NumPy name of a Weft data type.
const char* dtypeName(int dtype);

// The names of every type this build supports, for messages.
std::string supportedTypes();

}  // namespace weft_py
