#ifndef SLUICE_CORE_TENSOR_SPEC_H_
#define SLUICE_CORE_TENSOR_SPEC_H_

#include <string>

#include "core/dtype.h"
#include "core/partial_shape.h"
#include "core/tensor.h"

namespace sluice {

// What a tensor must be to fit somewhere: a dtype and a shape that may be known only in part
// (tf.TensorSpec). A dataset's element_spec holds one per component (dataset/element_spec.h).
struct TensorSpec {
  DType dtype = DType::kFloat32;
  PartialShape shape;  // a scalar unless set

  // The spec of exactly this tensor (tf.TensorSpec.from_tensor).
  static TensorSpec FromTensor(const Tensor& tensor) {
    return {tensor.dtype(), PartialShape(tensor.shape())};
  }

  // Whether `tensor` has this dtype and a shape compatible with this one: two compares, cheap
  // enough for every element a checkpoint restores.
  bool IsCompatibleWith(const Tensor& tensor) const {
    return tensor.dtype() == dtype && shape.IsCompatibleWith(tensor.shape());
  }
  bool IsCompatibleWith(const TensorSpec& other) const {
    return other.dtype == dtype && shape.IsCompatibleWith(other.shape);
  }

  // "int64[?, 3]", "bytes[]", "float32<unknown>".
  std::string DebugString() const;

  friend bool operator==(const TensorSpec& a, const TensorSpec& b) {
    return a.dtype == b.dtype && a.shape == b.shape;
  }
  friend bool operator!=(const TensorSpec& a, const TensorSpec& b) { return !(a == b); }
};

}  // namespace sluice

#endif  // SLUICE_CORE_TENSOR_SPEC_H_
