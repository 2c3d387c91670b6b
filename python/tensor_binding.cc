#include "python/tensor_binding.h"

#include <Python.h>
#include <dlpack/dlpack.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/device.h"
#include "core/dtype.h"
#include "python/errors.h"
#include "python/gil.h"
#include "train/backend/backend.h"

namespace sluice::python {
namespace {

// NumPy's name of a dtype (its buffer-protocol format and __array_interface__ typestr), or
// nullptr for bfloat16 and bytes, which NumPy has no dtype for.
struct NumpyType {
  const char* format;
  const char* typestr;
  const char* name;
};

const NumpyType* NumpyTypeOf(DType dtype) {
  static const NumpyType kUint8{"B", "|u1", "uint8"}, kInt32{"i", "<i4", "int32"},
      kInt64{"q", "<i8", "int64"}, kFloat16{"e", "<f2", "float16"}, kFloat32{"f", "<f4", "float32"};
  switch (dtype) {
    case DType::kUint8:
      return &kUint8;
    case DType::kInt32:
      return &kInt32;
    case DType::kInt64:
      return &kInt64;
    case DType::kFloat16:
      return &kFloat16;
    case DType::kFloat32:
      return &kFloat32;
    default:
      return nullptr;
  }
}

const NumpyType& NumpyTypeOrThrow(const Tensor& tensor) {
  const NumpyType* type = NumpyTypeOf(tensor.dtype());
  if (type == nullptr) {
    throw py::type_error(absl::StrCat("a ", DTypeName(tensor.dtype()),
                                      " tensor has no NumPy dtype; use __dlpack__ (e.g. "
                                      "torch.from_dlpack) for bfloat16"));
  }
  if (!tensor.device().is_cpu()) {
    throw py::type_error(absl::StrCat("a tensor on ", tensor.device().DebugString(),
                                      " has no host memory for NumPy; use __dlpack__"));
  }
  return *type;
}

std::vector<py::ssize_t> Dims(const Tensor& tensor) {
  std::vector<py::ssize_t> dims(static_cast<size_t>(tensor.rank()));
  for (int i = 0; i < tensor.rank(); ++i) dims[static_cast<size_t>(i)] = tensor.dim(i);
  return dims;
}

// Row-major strides in bytes.
std::vector<py::ssize_t> ByteStrides(const Tensor& tensor) {
  std::vector<py::ssize_t> strides(static_cast<size_t>(tensor.rank()));
  py::ssize_t stride = static_cast<py::ssize_t>(DTypeSize(tensor.dtype()));
  for (int i = tensor.rank() - 1; i >= 0; --i) {
    strides[static_cast<size_t>(i)] = stride;
    stride *= tensor.dim(i);
  }
  return strides;
}

// A valid address for a tensor of no elements (which may have no buffer): NumPy and DLPack
// consumers want a non-null pointer.
void* DataOf(const Tensor& tensor) {
  static char empty alignas(64)[64];
  const void* data = tensor.raw_data();
  return const_cast<void*>(data != nullptr ? data : empty);
}

// What a DLPack capsule owns: a view of the tensor (holding its buffer) and the shape and strides
// the DLTensor points into. For a device tensor, the consumer's stream: when the consumer lets go,
// the backend's later work (reusing the block) is ordered after what that stream had queued.
struct DLPackHolder {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
  train::backend::Backend* backend = nullptr;  // set for a device tensor ordered on `queue`
  uintptr_t queue = 0;
};

DLDataType DLDataTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return {kDLUInt, 8, 1};
    case DType::kInt32:
      return {kDLInt, 32, 1};
    case DType::kInt64:
      return {kDLInt, 64, 1};
    case DType::kFloat16:
      return {kDLFloat, 16, 1};
    case DType::kBFloat16:
      return {kDLBfloat, 16, 1};
    case DType::kFloat32:
      return {kDLFloat, 32, 1};
    default:
      throw py::type_error(
          absl::StrCat("a ", DTypeName(dtype), " tensor cannot be exported through DLPack"));
  }
}

DLDevice DLDeviceOf(const Device& device) {
  switch (device.type) {
    case DeviceType::kCpu:
      return {kDLCPU, 0};
    case DeviceType::kCuda:
      return {kDLCUDA, device.index};
    default:
      throw py::type_error(
          absl::StrCat("a tensor on ", device.DebugString(), " cannot be exported through DLPack"));
  }
}

// The capsule's destructor: a capsule nobody consumed (still named "dltensor") frees its tensor;
// a consumer renames it "used_dltensor" and calls the deleter itself when done.
void DeleteUnconsumedCapsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

// DLPack's stream argument for a CUDA tensor: None is the legacy default stream (1), -1 asks for
// no ordering, 0 is refused (ambiguous); otherwise a cudaStream_t as an integer.
int64_t StreamOf(const py::object& stream) {
  if (stream.is_none()) return 1;
  if (!py::isinstance<py::int_>(stream)) {
    throw py::type_error("__dlpack__: stream must be an int (a cudaStream_t, 1, 2 or -1) or None");
  }
  const int64_t s = stream.cast<int64_t>();
  if (s == 0 || s < -1) {
    throw py::value_error(absl::StrCat(
        "__dlpack__: stream ", s,
        " is not one (DLPack: 1 the legacy default stream, 2 the per-thread one, -1 none, or a "
        "cudaStream_t)"));
  }
  return s;
}

py::capsule ToDLPack(const Tensor& tensor, const py::object& stream) {
  const DLDevice device = DLDeviceOf(tensor.device());
  if (device.device_type == kDLCPU && !stream.is_none()) {
    throw py::value_error("__dlpack__: a CPU tensor takes no stream (stream must be None)");
  }
  // The backend whose later work waits for the consumer's stream once it lets go: none for a CPU
  // tensor or a consumer that asked for no ordering (-1).
  const int64_t queue = device.device_type == kDLCPU ? -1 : StreamOf(stream);
  train::backend::Backend* ordered = nullptr;
  if (queue != -1) {
    absl::StatusOr<train::backend::Backend*> backend = train::backend::BackendFor(tensor.device());
    if (!backend.ok()) ThrowStatus(backend.status());
    // The consumer's stream reads the tensor after the copy that wrote it, without the host
    // waiting (DLPack: the producer orders its work before `stream`).
    absl::Status status;
    {
      ReleaseGil release;
      status = (*backend)->OrderQueueAfterThis(static_cast<uintptr_t>(queue));
    }
    if (!status.ok()) ThrowStatus(status);
    ordered = *backend;
  }
  auto* holder =
      new DLPackHolder{tensor, {}, {}, {}, ordered, ordered ? static_cast<uintptr_t>(queue) : 0};
  for (int i = 0; i < tensor.rank(); ++i) holder->shape.push_back(tensor.dim(i));
  holder->strides.resize(holder->shape.size());
  int64_t stride = 1;
  for (int i = tensor.rank() - 1; i >= 0; --i) {
    holder->strides[static_cast<size_t>(i)] = stride;
    stride *= tensor.dim(i);
  }
  DLTensor& dl = holder->managed.dl_tensor;
  dl.data = DataOf(tensor);
  dl.device = device;
  dl.ndim = tensor.rank();
  dl.dtype = DLDataTypeOf(tensor.dtype());
  dl.shape = holder->shape.data();
  dl.strides = holder->strides.data();
  dl.byte_offset = 0;
  holder->managed.manager_ctx = holder;
  // May run on any thread, without the GIL: it touches C++ reference counts and, for a device
  // tensor, queues one wait (the consumer may still have kernels reading the block queued on its
  // stream; the backend reuses it only after them).
  holder->managed.deleter = [](DLManagedTensor* self) {
    auto* h = static_cast<DLPackHolder*>(self->manager_ctx);
    if (h->backend != nullptr) h->backend->OrderThisAfterQueue(h->queue).IgnoreError();
    delete h;
  };
  PyObject* capsule = PyCapsule_New(&holder->managed, "dltensor", DeleteUnconsumedCapsule);
  if (capsule == nullptr) {
    delete holder;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

py::object BytesToPython(const std::string* values, const std::vector<int64_t>& dims, size_t d,
                         int64_t* next) {
  if (d == dims.size()) return py::bytes(values[(*next)++]);
  py::list list(static_cast<size_t>(dims[d]));
  for (int64_t i = 0; i < dims[d]; ++i) {
    list[static_cast<size_t>(i)] = BytesToPython(values, dims, d + 1, next);
  }
  return list;
}

std::string TensorRepr(const Tensor& tensor) {
  return absl::StrCat("sluice.Tensor(", DTypeName(tensor.dtype()), tensor.shape().DebugString(),
                      ", ", tensor.device().DebugString(), ")");
}

Tensor BytesTensorFromArray(const py::array& array) {
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  Tensor tensor(DType::kBytes, Shape(dims));
  std::string* out = tensor.data<std::string>();
  py::list items = array.attr("ravel")().attr("tolist")();
  size_t i = 0;
  for (py::handle item : items) {
    if (py::isinstance<py::bytes>(item)) {
      out[i++] = item.cast<std::string>();
    } else if (py::isinstance<py::str>(item)) {
      out[i++] = item.cast<std::string>();  // UTF-8
    } else {
      // NumPy made an object array: a value it has no dtype for, or numbers among strings.
      std::string type = py::str(item.get_type().attr("__name__"));
      type = absl::StrCat(absl::StrContains("aeiouAEIOU", type.substr(0, 1)) ? "an " : "a ", type);
      if (py::isinstance<py::int_>(item) && !py::isinstance<py::bool_>(item)) {
        const bool fits = item.attr("bit_length")().cast<int64_t>() < 64;
        if (!fits) {
          std::string digits = py::str(item);
          if (digits.size() > 40) digits = absl::StrCat(digits.substr(0, 37), "...");
          throw py::value_error(absl::StrCat("the Python int ", digits,
                                             " does not fit int64, sluice's widest integer"));
        }
      }
      if (py::isinstance<py::int_>(item) || py::isinstance<py::float_>(item)) {
        throw py::type_error(absl::StrCat(
            type, " among bytes or str: a tensor's items are all numbers or all strings"));
      }
      throw py::type_error(
          absl::StrCat(type,
                       " cannot be a sluice tensor's value: a component is a number, bytes or "
                       "str, a NumPy array, or a (nested) list or tuple of one kind of them"));
    }
  }
  return tensor;
}

// The sluice dtype a NumPy array converts to, by its kind and item size.
DType DTypeForNumpy(const py::dtype& dtype) {
  const char kind = dtype.kind();
  // Read as a Python attribute: pybind11 2.10 reads the descriptor's struct, whose elsize field
  // moved in NumPy 2.
  const auto size = dtype.attr("itemsize").cast<py::ssize_t>();
  if (kind == 'b') return DType::kUint8;
  if (kind == 'u') return size == 1 ? DType::kUint8 : size == 2 ? DType::kInt32 : DType::kInt64;
  if (kind == 'i') return size <= 4 ? DType::kInt32 : DType::kInt64;
  if (kind == 'f') return size == 2 ? DType::kFloat16 : DType::kFloat32;
  throw py::type_error(absl::StrCat("no sluice dtype for NumPy's ",
                                    std::string(py::str(py::object(dtype))),
                                    " (sluice has uint8, int32, int64, float16, bfloat16, "
                                    "float32 and bytes)"));
}

// The shape and strides a Py_buffer points into, until it is released.
struct BufferLayout {
  std::vector<py::ssize_t> shape, strides;
};

extern "C" int GetBuffer(PyObject* obj, Py_buffer* view, int flags) {
  view->obj = nullptr;
  const Tensor& t = py::handle(obj).cast<const PyTensor&>().tensor();
  const NumpyType* type = NumpyTypeOf(t.dtype());
  if (type == nullptr || !t.device().is_cpu()) {
    PyErr_SetString(
        PyExc_BufferError,
        absl::StrCat("a ", DTypeName(t.dtype()), " tensor on ", t.device().DebugString(),
                     " has no buffer; use __dlpack__ (e.g. torch.from_dlpack)")
            .c_str());
    return -1;
  }
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError,
                    "sluice.Tensor buffers are read-only (they may be shared); copy to write");
    return -1;
  }
  auto* layout = new BufferLayout{Dims(t), ByteStrides(t)};
  view->buf = DataOf(t);
  view->obj = obj;
  Py_INCREF(obj);
  view->len = static_cast<py::ssize_t>(t.num_elements() * DTypeSize(t.dtype()));
  view->readonly = 1;
  view->itemsize = static_cast<py::ssize_t>(DTypeSize(t.dtype()));
  view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT ? const_cast<char*>(type->format) : nullptr;
  view->ndim = t.rank();
  view->shape = layout->shape.data();
  view->strides = layout->strides.data();
  view->suboffsets = nullptr;
  view->internal = layout;
  return 0;
}

extern "C" void ReleaseBuffer(PyObject*, Py_buffer* view) {
  delete static_cast<BufferLayout*>(view->internal);
}

// np.asarray(tensor): its read-only NumPy view.
py::object AsNumpy(const py::object& tensor) {
  return py::module_::import("numpy").attr("asarray")(tensor);
}

}  // namespace

py::object ComponentToPython(const Tensor& tensor) {
  if (tensor.dtype() == DType::kBytes) {
    std::vector<int64_t> dims(tensor.shape().dims().begin(), tensor.shape().dims().end());
    int64_t next = 0;
    return BytesToPython(tensor.data<std::string>(), dims, 0, &next);
  }
  return py::cast(PyTensor(tensor));
}

py::object ElementToPython(const Element& element) {
  if (element.size() == 1) return ComponentToPython(element[0]);
  py::tuple tuple(element.size());
  for (size_t i = 0; i < element.size(); ++i) tuple[i] = ComponentToPython(element[i]);
  return tuple;
}

py::object ComponentToNumpy(const Tensor& tensor) {
  const NumpyType* type = NumpyTypeOf(tensor.dtype());
  if (type == nullptr || !tensor.device().is_cpu()) return ComponentToPython(tensor);
  py::object owner = py::cast(PyTensor(tensor));
  py::array array(py::dtype(type->name), Dims(tensor), ByteStrides(tensor), DataOf(tensor), owner);
  // The buffer may be shared (a cached element, a slice of from_tensor_slices' arrays): the
  // function gets a view it cannot write through.
  py::detail::array_proxy(array.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return array;
}

Tensor TensorFromPython(py::handle value) {
  if (py::isinstance<PyTensor>(value)) return value.cast<const PyTensor&>().tensor();
  if (py::isinstance<py::bytes>(value) || py::isinstance<py::str>(value)) {
    Tensor tensor(DType::kBytes, Shape{});
    *tensor.data<std::string>() = value.cast<std::string>();
    return tensor;
  }
  if (py::isinstance<py::dict>(value)) {
    throw py::type_error(
        "sluice elements are tuples of tensors, not dicts: pass a tuple (in a fixed order)");
  }
  py::module_ numpy = py::module_::import("numpy");
  py::array array = numpy.attr("asarray")(value);
  const char kind = array.dtype().kind();
  if (kind == 'S' || kind == 'U') {
    // NumPy's fixed-width strings drop trailing NUL bytes (a serialized Example may end in one):
    // the items of a list or tuple go through as objects, as they are.
    if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
      array = numpy.attr("asarray")(value, py::arg("dtype") = "object");
    }
    return BytesTensorFromArray(array);
  }
  if (kind == 'O') return BytesTensorFromArray(array);
  const DType dtype = DTypeForNumpy(array.dtype());
  if (kind == 'u' && array.itemsize() == 8 && array.size() > 0 &&
      array.attr("max")().cast<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    throw py::value_error(
        "an unsigned 64-bit value above 2**63 - 1 does not fit sluice's int64 (it would wrap)");
  }
  const NumpyType* type = NumpyTypeOf(dtype);
  // asarray(order="C"), not ascontiguousarray, which makes a scalar an array of one element.
  py::array contiguous =
      numpy.attr("asarray")(array, py::arg("dtype") = type->name, py::arg("order") = "C");
  std::vector<int64_t> dims(contiguous.shape(), contiguous.shape() + contiguous.ndim());
  Tensor tensor(dtype, Shape(dims));
  if (tensor.byte_size() > 0) {
    std::memcpy(tensor.raw_data(), contiguous.data(), tensor.byte_size());
  }
  return tensor;
}

Element ElementFromPython(py::handle value) {
  Element element;
  if (py::isinstance<py::tuple>(value)) {
    for (py::handle item : value) element.push_back(TensorFromPython(item));
  } else {
    element.push_back(TensorFromPython(value));
  }
  return element;
}

DType DTypeFromPython(py::handle dtype) {
  std::string name;
  if (py::isinstance<py::str>(dtype)) {
    name = dtype.cast<std::string>();
    if (name == "string" || name == "str" || name == "bytes") return DType::kBytes;
  } else {
    py::object numpy_dtype = py::module_::import("numpy").attr("dtype")(dtype);
    const char kind = numpy_dtype.attr("kind").cast<std::string>()[0];
    if (kind == 'S' || kind == 'U' || kind == 'O') return DType::kBytes;
    name = numpy_dtype.attr("name").cast<std::string>();
  }
  absl::StatusOr<DType> parsed = DTypeFromName(name);
  if (!parsed.ok() || *parsed == DType::kBytes) {
    if (parsed.ok()) return *parsed;
    throw py::type_error(absl::StrCat("no sluice dtype '", name,
                                      "' (sluice has uint8, int32, int64, float16, bfloat16, "
                                      "float32 and string)"));
  }
  return *parsed;
}

void RegisterTensor(py::module_& m) {
  // pybind11's NumPy API table is a function-local static that imports NumPy: made first by a
  // pipeline thread (a map function's arguments), it deadlocked that thread, which holds the GIL,
  // against another inside the import, which waits for it. Made here, once, by the importer.
  try {
    py::detail::npy_api::get();
  } catch (py::error_already_set& e) {
    throw py::import_error(absl::StrCat("sluice needs NumPy: ", e.what()));
  }
  py::class_<PyTensor> cls(m, "Tensor", py::buffer_protocol(), R"doc(
One component of a sluice element: a view of a C++ tensor, shared without a copy.

np.asarray(t) (buffer protocol, __array_interface__), torch.from_dlpack(t) and
jax.dlpack.from_dlpack(t) view its memory, which stays valid as long as any of them
lives, after the iterator is gone too. NumPy views are read-only: the buffer may be
shared with other elements (a cache, from_tensor_slices' arrays); np.array(t) copies.
)doc");
  // Our own buffer functions instead of def_buffer's: those cannot refuse a request (a bfloat16
  // tensor, a writable view) with an exception.
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  type->tp_as_buffer->bf_getbuffer = GetBuffer;
  type->tp_as_buffer->bf_releasebuffer = ReleaseBuffer;
  cls.def_property_readonly("__array_interface__",
                            [](const PyTensor& self) {
                              const Tensor& t = self.tensor();
                              const NumpyType& type = NumpyTypeOrThrow(t);
                              py::dict d;
                              d["version"] = 3;
                              d["shape"] = py::tuple(py::cast(Dims(t)));
                              d["typestr"] = type.typestr;
                              d["data"] = py::make_tuple(reinterpret_cast<uintptr_t>(DataOf(t)),
                                                         /*read-only=*/true);
                              d["strides"] = py::none();
                              return d;
                            })
      .def(
          "__dlpack__",
          [](const PyTensor& self, const py::object& stream, const py::object& /*max_version*/,
             const py::object& dl_device, const py::object& copy) {
            if (!copy.is_none() && copy.cast<bool>()) {
              throw py::buffer_error(
                  "__dlpack__(copy=True): sluice exports views only; copy on the consumer's side");
            }
            if (!dl_device.is_none()) {
              const DLDevice d = DLDeviceOf(self.tensor().device());
              const auto want = dl_device.cast<std::pair<int, int>>();
              if (want.first != static_cast<int>(d.device_type) || want.second != d.device_id) {
                throw py::buffer_error(absl::StrCat("__dlpack__(dl_device=(", want.first, ", ",
                                                    want.second, ")): the tensor is on ",
                                                    self.tensor().device().DebugString(),
                                                    " and sluice exports views only"));
              }
            }
            return ToDLPack(self.tensor(), stream);
          },
          py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
          "A DLPack capsule viewing this tensor (an unversioned one, whatever max_version asks: "
          "consumers take both); it keeps the memory alive until its consumer releases it. For a "
          "CUDA tensor, `stream` is the consumer's (DLPack: None or 1 the legacy default stream, "
          "2 the per-thread one, a cudaStream_t, or -1 for no ordering): its later work waits for "
          "the copy that wrote the tensor, and sluice reuses the memory only after the work that "
          "stream had queued when the consumer released it.")
      .def(
          "__dlpack_device__",
          [](const PyTensor& self) {
            const DLDevice d = DLDeviceOf(self.tensor().device());
            return py::make_tuple(static_cast<int>(d.device_type), d.device_id);
          },
          "The DLPack (device_type, device_id) pair of its memory.")
      .def_property_readonly(
          "shape", [](const PyTensor& self) { return py::tuple(py::cast(Dims(self.tensor()))); },
          "The dimensions, a tuple of ints (() for a scalar).")
      .def_property_readonly(
          "dtype",
          [](const PyTensor& self) { return std::string(DTypeName(self.tensor().dtype())); },
          "The dtype's name: uint8, int32, int64, float16, bfloat16 or float32.")
      .def_property_readonly(
          "ndim", [](const PyTensor& self) { return self.tensor().rank(); }, "len(shape).")
      .def_property_readonly(
          "nbytes", [](const PyTensor& self) { return self.tensor().byte_size(); },
          "The bytes of its elements (as NumPy's nbytes).")
      .def_property_readonly(
          "device", [](const PyTensor& self) { return self.tensor().device().DebugString(); },
          "Where its memory is: 'cpu', 'cuda:0', ...")
      .def_property_readonly(
          "data_ptr",
          [](const PyTensor& self) { return reinterpret_cast<uintptr_t>(DataOf(self.tensor())); },
          "The address of the first element (what a NumPy or DLPack view of it points to).")
      .def(
          "numpy", [](py::object self) { return AsNumpy(self); },
          "np.asarray(self): a read-only NumPy view, no copy.")
      // Values, as NumPy's arrays give them (a loop's `if label == 3`, `int(label)`,
      // `names[label]`), computed on the NumPy view: == and != element-wise, conversions of one
      // element. Hashed by identity, as torch.Tensor, so that tensors still go in sets and dicts.
      .def(
          "item", [](py::object self) { return AsNumpy(self).attr("item")(); },
          "The value of a one-element tensor as a Python number (NumPy's item()).")
      .def("__int__", [](py::object self) { return AsNumpy(self).attr("__int__")(); })
      .def("__float__", [](py::object self) { return AsNumpy(self).attr("__float__")(); })
      .def("__index__", [](py::object self) { return AsNumpy(self).attr("__index__")(); })
      .def("__bool__", [](py::object self) { return AsNumpy(self).attr("__bool__")(); })
      .def("__eq__",
           [](py::object self, py::object other) { return AsNumpy(self).attr("__eq__")(other); })
      .def("__ne__",
           [](py::object self, py::object other) { return AsNumpy(self).attr("__ne__")(other); })
      .def("__hash__",
           [](py::object self) {
             return static_cast<Py_hash_t>(reinterpret_cast<intptr_t>(self.ptr()) >> 4);
           })
      .def("__len__",
           [](const PyTensor& self) {
             if (self.tensor().rank() == 0) throw py::type_error("len() of a scalar tensor");
             return self.tensor().dim(0);
           })
      .def("__repr__", [](const PyTensor& self) { return TensorRepr(self.tensor()); });
}

}  // namespace sluice::python
