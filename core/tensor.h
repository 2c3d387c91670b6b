#ifndef SLUICE_CORE_TENSOR_H_
#define SLUICE_CORE_TENSOR_H_

#include <cassert>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/buffer.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/shape.h"

namespace sluice {

// An n-dimensional array of one dtype, viewing a reference-counted buffer.
// Copying a Tensor copies the view, not the data; Slice() is zero-copy along
// the first dimension. kBytes tensors hold one std::string per element.
class Tensor {
 public:
  // An empty tensor: float32 with shape [0] and no buffer.
  Tensor();
  // Allocates a CPU tensor. Numeric elements are left uninitialised (batches
  // are filled in place, so zeroing would be wasted work); use Zeros() when
  // the values matter. kBytes elements start as empty strings.
  Tensor(DType dtype, Shape shape);
  // Views `buffer` starting `byte_offset` bytes in. The buffer must be large
  // enough; kBytes tensors cannot be made this way.
  static absl::StatusOr<Tensor> FromBuffer(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer,
                                           size_t byte_offset = 0);

  static Tensor Zeros(DType dtype, Shape shape);
  template <typename T>
  static Tensor Scalar(T value);
  // A 1-D tensor of `values`, or of `shape` when given (its element count must
  // equal values.size()).
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values);
  template <typename T>
  static absl::StatusOr<Tensor> FromVector(const std::vector<T>& values, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t num_elements() const { return shape_.num_elements(); }
  Device device() const { return buffer_ ? buffer_->device() : Device::Cpu(); }
  // Bytes of element storage (for kBytes, the sum of the string lengths).
  size_t byte_size() const;
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  size_t byte_offset() const { return offset_; }

  void* raw_data() { return buffer_ ? static_cast<char*>(buffer_->data()) + offset_ : nullptr; }
  const void* raw_data() const {
    return buffer_ ? static_cast<const char*>(buffer_->data()) + offset_ : nullptr;
  }
  template <typename T>
  T* data() {
    assert(DTypeOf<T>::value == dtype_);
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    assert(DTypeOf<T>::value == dtype_);
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  absl::Span<T> flat() {
    return absl::Span<T>(data<T>(), static_cast<size_t>(num_elements()));
  }
  template <typename T>
  absl::Span<const T> flat() const {
    return absl::Span<const T>(data<T>(), static_cast<size_t>(num_elements()));
  }
  // The single value of a tensor with one element. Checked in every build: a wrong type or count
  // ends the process with a message naming both (a read of the wrong bytes went on silently).
  template <typename T>
  const T& scalar() const {
    if (num_elements() != 1 || DTypeOf<T>::value != dtype_) [[unlikely]] {
      ScalarMisuse(DTypeOf<T>::value);
    }
    return *data<T>();
  }

  // Rows [begin, end) along the first dimension, sharing this buffer.
  absl::StatusOr<Tensor> Slice(int64_t begin, int64_t end) const;
  // Row i along the first dimension with that dimension dropped, sharing this
  // buffer.
  absl::StatusOr<Tensor> SubTensor(int64_t i) const;
  // The same data with another shape of the same element count.
  absl::StatusOr<Tensor> Reshape(Shape shape) const;
  // A deep copy into a new CPU buffer.
  Tensor Clone() const;
  // Copies `src` (same dtype, and shape equal to this tensor's shape without
  // its first dimension) into row `i`. Used to fill batches in place.
  absl::Status CopyIntoRow(int64_t i, const Tensor& src);

  bool SharesBufferWith(const Tensor& other) const {
    return buffer_ != nullptr && buffer_ == other.buffer_;
  }
  // Same dtype, shape and values (bitwise for floating point).
  bool Equals(const Tensor& other) const;
  // "float32[2, 3] {1, 2, 3, 4, 5, 6}", eliding past `max_values`.
  std::string DebugString(int max_values = 16) const;

 private:
  [[noreturn]] void ScalarMisuse(DType wanted) const;
  Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer, size_t offset)
      : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)), offset_(offset) {}
  // Bytes of one row along the first dimension.
  size_t RowBytes() const;

  DType dtype_;
  Shape shape_;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
};

template <typename T>
Tensor Tensor::Scalar(T value) {
  Tensor t(DTypeOf<T>::value, Shape{});
  *t.data<T>() = std::move(value);
  return t;
}

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values) {
  Tensor t(DTypeOf<T>::value, Shape{static_cast<int64_t>(values.size())});
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

template <typename T>
absl::StatusOr<Tensor> Tensor::FromVector(const std::vector<T>& values, Shape shape) {
  if (shape.num_elements() != static_cast<int64_t>(values.size())) {
    return absl::InvalidArgumentError("FromVector: shape " + shape.DebugString() + " holds " +
                                      std::to_string(shape.num_elements()) + " values, got " +
                                      std::to_string(values.size()));
  }
  Tensor t = FromVector(values);
  return t.Reshape(std::move(shape));
}

}  // namespace sluice

#endif  // SLUICE_CORE_TENSOR_H_
