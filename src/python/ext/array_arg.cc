// Arrays from Python objects: the buffer protocol first (NumPy's path, the one the overhead budget
// is spent on), then __cuda_array_interface__, then DLPack.
#include "array_arg.h"

#include <cstring>
#include <utility>
#include <vector>

#include "weft/weft.h"

#if WEFT_PY_NUMPY
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL weft_py_ARRAY_API
#include <numpy/arrayobject.h>
#endif

namespace weft_py {

namespace {

// The DLPack ABI (dlpack.h, version 0.x, which every producer still exports when asked without
// max_version): the structs as the standard lays them out.
struct DLDevice {
  int32_t deviceType;
  int32_t deviceId;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byteOffset;
};
struct DLManagedTensor {
  DLTensor tensor;
  void* managerCtx;
  void (*deleter)(DLManagedTensor*);
};
enum : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLROCM = 10, kDLROCMHost = 11, kDLCUDAManaged = 13 };
enum : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5 };

constexpr int kNoType = -1;

// A type by NumPy's kind letter and size in bytes ('i' 4 -> int32): the language both
// __cuda_array_interface__'s typestr and (translated) DLPack speak.
int typeFromKind(char kind, size_t size) {
  switch (kind) {
    case 'i': return size == 1 ? ncclInt8 : size == 4 ? ncclInt32 : size == 8 ? ncclInt64 : kNoType;
    case 'u': return size == 1 ? ncclUint8 : size == 4 ? ncclUint32 : size == 8 ? ncclUint64 : kNoType;
    case 'f': return size == 2 ? ncclFloat16 : size == 4 ? ncclFloat32 : size == 8 ? ncclFloat64 : kNoType;
#ifdef weftComplex64
    case 'c': return size == 8 ? weftComplex64 : size == 16 ? weftComplex128 : kNoType;
#endif
    default: return kNoType;
  }
}

// A PEP 3118 format string ("<f", "Zd", "@q"); the item size settles the width of C's int types.
int typeFromFormat(const char* format, size_t itemSize) {
  if (format == nullptr) return ncclUint8;  // no format means plain bytes
  const char* f = format;
  if (*f == '@' || *f == '=' || *f == '<') {
    ++f;
  } else if (*f == '>' || *f == '!') {
    if (itemSize > 1) return kNoType;  // big-endian data: Weft reduces native (little-endian) numbers
    ++f;
  }
  if (f[0] == 'Z' && f[1] != '\0' && f[2] == '\0') return typeFromKind('c', itemSize);
  if (f[0] == '\0' || f[1] != '\0') return kNoType;
  switch (f[0]) {
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
    case 'n': return typeFromKind('i', itemSize);
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
    case 'N': return typeFromKind('u', itemSize);
    case 'e':
    case 'f':
    case 'd': return typeFromKind('f', itemSize);
    default: return kNoType;
  }
}

int typeFromDLPack(const DLDataType& t) {
  if (t.lanes != 1 || t.bits % 8 != 0) return kNoType;
  size_t size = t.bits / 8;
  switch (t.code) {
    case kDLInt: return typeFromKind('i', size);
    case kDLUInt: return typeFromKind('u', size);
    case kDLFloat: return typeFromKind('f', size);
    case kDLBfloat: return size == 2 ? ncclBfloat16 : kNoType;
    case kDLComplex: return typeFromKind('c', size);
    default: return kNoType;
  }
}

// True when shape/strides (strides in elements) describe one C-ordered block. Extents of 1 may
// carry any stride (NumPy and torch give them arbitrary ones), and an empty array is always fine.
bool cContiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t expect = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return true;
    if (shape[i] != 1 && strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

std::string typeNameOf(py::handle obj, const std::string& fallback) {
  if (py::hasattr(obj, "dtype")) return py::str(obj.attr("dtype"));
  return fallback;
}

[[noreturn]] void badType(py::handle obj, const char* role, const std::string& what) {
  throw py::type_error(std::string("weft: ") + role + " has type " + typeNameOf(obj, what) +
                       ", which Weft does not support (supported: " + supportedTypes() + ")");
}

[[noreturn]] void notContiguous(const char* role) {
  throw py::value_error(std::string("weft: ") + role +
                        " is not contiguous: Weft reads and writes arrays in place and never copies "
                        "them; pass a contiguous array (numpy.ascontiguousarray, .copy())");
}

// The stream the array's own library works on now: CuPy's and torch's current stream; 0 (the
// default stream) for any other library. Only GPU arrays ask, and never on the host path.
uintptr_t libraryStream(py::handle obj) {
  std::string module = py::str(py::type::of(obj).attr("__module__"));
  if (module.rfind("cupy", 0) == 0) {
    return py::module_::import("cupy").attr("cuda").attr("get_current_stream")().attr("ptr").cast<uintptr_t>();
  }
  if (module.rfind("torch", 0) == 0) {
    py::object cuda = py::module_::import("torch").attr("cuda");
    return cuda.attr("current_stream")(obj.attr("device")).attr("cuda_stream").cast<uintptr_t>();
  }
  return 0;
}

void fromCudaArrayInterface(ArrayArg& a, py::handle obj, const char* role, bool writable) {
  py::dict cai = obj.attr("__cuda_array_interface__");
  std::string typestr = py::str(cai["typestr"]);
  if (typestr.size() < 3) badType(obj, role, typestr);
  size_t size = std::stoul(typestr.substr(2));
  if (typestr[0] == '>' && size > 1) badType(obj, role, typestr);
  a.dtype = typeFromKind(typestr[1], size);
  if (a.dtype == kNoType) badType(obj, role, typestr);
  a.itemSize = size;
  std::vector<int64_t> shape;
  for (py::handle d : py::tuple(cai["shape"])) shape.push_back(d.cast<int64_t>());
  a.count = 1;
  for (int64_t d : shape) a.count *= static_cast<size_t>(d);
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    std::vector<int64_t> strides;
    for (py::handle s : py::tuple(cai["strides"])) {
      int64_t bytes = s.cast<int64_t>();
      if (bytes % static_cast<int64_t>(size) != 0) notContiguous(role);
      strides.push_back(bytes / static_cast<int64_t>(size));
    }
    if (!cContiguous(shape, strides)) notContiguous(role);
  }
  py::tuple data = cai["data"];
  a.ptr = reinterpret_cast<void*>(data[0].cast<uintptr_t>());
  if (writable && data[1].cast<bool>()) {
    throw py::value_error(std::string("weft: ") + role + " is read-only, but Weft writes into it");
  }
  a.device = true;
  a.hasStream = true;
  // Version 3's "stream" is the producer's stream (1 and 2 mean CUDA's legacy and per-thread
  // default streams, the same handle values CUDA itself uses); without one, ask the library.
  if (cai.contains("stream") && !cai["stream"].is_none()) {
    a.stream = cai["stream"].cast<uintptr_t>();
  } else {
    a.stream = libraryStream(obj);
  }
  a.kind = "cuda_array_interface";
}

}  // namespace

ArrayArg::ArrayArg(ArrayArg&& o) noexcept
    : ptr(o.ptr), count(o.count), itemSize(o.itemSize), dtype(o.dtype), device(o.device), hasStream(o.hasStream),
      stream(o.stream), kind(std::move(o.kind)), view_(o.view_), hasView_(o.hasView_), keep_(std::move(o.keep_)) {
  o.hasView_ = false;
}

ArrayArg::~ArrayArg() {
  if (hasView_) PyBuffer_Release(&view_);
}

size_t dtypeSize(int dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
#ifdef weftComplex64
    case weftComplex64: return 8;
    case weftComplex128: return 16;
#endif
    default: return 0;
  }
}

const char* dtypeName(int dtype) {
  switch (dtype) {
    case ncclInt8: return "int8";
    case ncclUint8: return "uint8";
    case ncclInt32: return "int32";
    case ncclUint32: return "uint32";
    case ncclInt64: return "int64";
    case ncclUint64: return "uint64";
    case ncclFloat16: return "float16";
    case ncclBfloat16: return "bfloat16";
    case ncclFloat32: return "float32";
    case ncclFloat64: return "float64";
#ifdef weftComplex64
    case weftComplex64: return "complex64";
    case weftComplex128: return "complex128";
#endif
    default: return "unknown";
  }
}

std::string supportedTypes() {
  std::string s = "int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, float64";
#ifdef weftComplex64
  s += ", complex64, complex128";
#endif
  return s;
}

#if WEFT_PY_NUMPY
namespace {
// Set once at import when NumPy's C API loaded (initNumpy); false leaves NumPy arrays to the
// buffer protocol.
bool gNumpy = false;
}  // namespace

// A NumPy array read from its struct: a few loads instead of the buffer protocol, whose export
// builds the format string on every call (a third of the Python layer's cost of a small
// AllReduce). Returns false for what the general path should handle (and explain).
bool fromNumpy(ArrayArg& a, py::handle obj, const char* role, bool writable) {
  auto* arr = reinterpret_cast<PyArrayObject*>(obj.ptr());
  const PyArray_Descr* d = PyArray_DESCR(arr);
  if (d->byteorder == '>') return false;
  int dtype = typeFromKind(d->kind, static_cast<size_t>(d->elsize));
  if (dtype == kNoType) return false;
  if (!PyArray_CHKFLAGS(arr, NPY_ARRAY_C_CONTIGUOUS) && !PyArray_CHKFLAGS(arr, NPY_ARRAY_F_CONTIGUOUS)) {
    notContiguous(role);
  }
  if (writable && !PyArray_ISWRITEABLE(arr)) {
    throw py::value_error(std::string("weft: ") + role + " is read-only, but Weft writes into it");
  }
  a.ptr = PyArray_DATA(arr);
  a.count = static_cast<size_t>(PyArray_SIZE(arr));
  a.itemSize = static_cast<size_t>(d->elsize);
  a.dtype = dtype;
  a.kind = "buffer";
  a.keep_ = py::reinterpret_borrow<py::object>(obj);
  return true;
}

void initNumpy() {
  gNumpy = _import_array() >= 0;
  if (!gNumpy) PyErr_Clear();  // no NumPy, or one of another ABI: the buffer protocol serves it
}
#else
void initNumpy() {}
#endif

ArrayArg toArray(py::handle obj, const char* role, bool writable) {
  ArrayArg a;
#if WEFT_PY_NUMPY
  if (gNumpy && PyArray_Check(obj.ptr()) && fromNumpy(a, obj, role, writable)) return a;
#endif
  if (PyObject_CheckBuffer(obj.ptr())) {
    if (PyObject_GetBuffer(obj.ptr(), &a.view_, PyBUF_RECORDS_RO) != 0) throw py::error_already_set();
    a.hasView_ = true;
    const Py_buffer& v = a.view_;
    a.itemSize = static_cast<size_t>(v.itemsize);
    a.dtype = typeFromFormat(v.format, a.itemSize);
    // NumPy has no bfloat16 of its own; extension types (ml_dtypes) say so in their dtype's name.
    if (a.dtype == kNoType && a.itemSize == 2 && py::hasattr(obj, "dtype") &&
        std::string(py::str(obj.attr("dtype"))) == "bfloat16") {
      a.dtype = ncclBfloat16;
    }
    if (a.dtype == kNoType) badType(obj, role, std::string("buffer format '") + (v.format ? v.format : "B") + "'");
    if (!PyBuffer_IsContiguous(&v, 'A')) notContiguous(role);
    if (writable && v.readonly) {
      throw py::value_error(std::string("weft: ") + role + " is read-only, but Weft writes into it");
    }
    a.ptr = v.buf;
    a.count = static_cast<size_t>(v.len) / a.itemSize;
    a.kind = "buffer";
    return a;
  }
  if (py::hasattr(obj, "__cuda_array_interface__")) {
    fromCudaArrayInterface(a, obj, role, writable);
    a.keep_ = py::reinterpret_borrow<py::object>(obj);
    return a;
  }
  if (py::hasattr(obj, "__dlpack__") && py::hasattr(obj, "__dlpack_device__")) {
    py::tuple dev = obj.attr("__dlpack_device__")();
    int32_t devType = dev[0].cast<int32_t>();
    bool host = devType == kDLCPU || devType == kDLCUDAHost || devType == kDLROCMHost;
    if (!host && devType != kDLCUDA && devType != kDLCUDAManaged && devType != kDLROCM) {
      throw py::value_error(std::string("weft: ") + role + " lives on DLPack device type " + std::to_string(devType) +
                            ", which Weft cannot reach");
    }
    py::object capsule;
    if (host) {
      capsule = obj.attr("__dlpack__")();
    } else {
      a.device = true;
      a.hasStream = true;
      a.stream = libraryStream(obj);
      // The producer orders its pending work before this stream; DLPack forbids 0 (ambiguous)
      // and spells CUDA's legacy default stream 1.
      capsule = obj.attr("__dlpack__")(py::arg("stream") = a.stream == 0 ? 1 : a.stream);
    }
    // The capsule keeps its name "dltensor": it stays the producer's, and its destructor frees the
    // tensor when this argument lets go of it.
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
    if (managed == nullptr) throw py::error_already_set();
    const DLTensor& t = managed->tensor;
    a.dtype = typeFromDLPack(t.dtype);
    if (a.dtype == kNoType) {
      badType(obj, role, "DLPack code " + std::to_string(t.dtype.code) + " bits " + std::to_string(t.dtype.bits));
    }
    a.itemSize = dtypeSize(a.dtype);
    std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
    a.count = 1;
    for (int64_t d : shape) a.count *= static_cast<size_t>(d);
    if (t.strides != nullptr && !cContiguous(shape, std::vector<int64_t>(t.strides, t.strides + t.ndim))) {
      notContiguous(role);
    }
    a.ptr = static_cast<char*>(t.data) + t.byteOffset;
    a.kind = "dlpack";
    a.keep_ = std::move(capsule);
    return a;
  }
  throw py::type_error(std::string("weft: ") + role + " must be an array (the buffer protocol, " +
                       "__cuda_array_interface__ or DLPack), not " +
                       std::string(py::str(py::type::of(obj).attr("__name__"))));
}

}  // namespace weft_py
