#ifndef SLUICE_PYTHON_TENSOR_BINDING_H_
#define SLUICE_PYTHON_TENSOR_BINDING_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <utility>
#include <vector>

#include "core/element.h"
#include "core/tensor.h"

// sluice.Tensor, the Python face of one component of an element, and the conversions between
// Python values and tensors.
namespace sluice::python {

namespace py = pybind11;

// A numeric component as Python holds it: the C++ tensor itself, whose reference-counted buffer
// stays alive as long as this object, a NumPy array viewing it (buffer protocol,
// __array_interface__) or a DLPack capsule taken from it (the capsule's deleter holds the
// buffer) lives. Nothing is copied.
class PyTensor {
 public:
  explicit PyTensor(Tensor tensor) : tensor_(std::move(tensor)) {}
  const Tensor& tensor() const { return tensor_; }

 private:
  Tensor tensor_;
};

// Registers sluice.Tensor in `m`.
void RegisterTensor(py::module_& m);

// A component for Python, without a copy of numeric data: sluice.Tensor for numbers, `bytes` for a
// bytes scalar, a (nested) list of bytes for a bytes tensor.
py::object ComponentToPython(const Tensor& tensor);
// One component: itself; several: a tuple, as tf.data yields them.
py::object ElementToPython(const Element& element);

// What a Python map function is given for a component: a read-only NumPy array viewing the tensor
// (sluice.Tensor for bfloat16, which NumPy lacks); bytes as ComponentToPython gives them.
py::object ComponentToNumpy(const Tensor& tensor);

// A Python value as a tensor: a sluice.Tensor as it is (shared); a NumPy array, a nested list or a
// number, copied, in the nearest sluice dtype (float64 -> float32, bool -> uint8, ints -> int64 or
// int32); bytes, str (UTF-8) and arrays or lists of them as a bytes tensor. Throws TypeError for
// anything else.
Tensor TensorFromPython(py::handle value);
// A tuple's items, one component each; anything else is one component.
Element ElementFromPython(py::handle value);

// A dtype given in Python: a name ("float32"; "string", "str" or "bytes" for kBytes, as tf.string),
// a NumPy dtype or type (np.float32). Throws TypeError for one sluice lacks (float64).
DType DTypeFromPython(py::handle dtype);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_TENSOR_BINDING_H_
