#ifndef SLUICE_CORE_PARTIAL_SHAPE_H_
#define SLUICE_CORE_PARTIAL_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "core/shape.h"

namespace sluice {

// A shape that may be known only in part: tf.TensorShape with None dimensions (TensorFlow's
// PartialTensorShape in C++). A dimension of kUnknownDim (-1) can be any size; a shape of unknown
// rank can be any shape. What a dataset says of its elements' shapes (core/tensor_spec.h).
class PartialShape {
 public:
  static constexpr int64_t kUnknownDim = -1;

  // A scalar, as Shape() is. (TensorFlow's PartialTensorShape() has an unknown rank; here that is
  // UnknownRank(), so that `{}` reads as the scalar it is everywhere else.)
  PartialShape() = default;
  // Each dimension a size, or kUnknownDim (any negative value is read as unknown).
  PartialShape(std::initializer_list<int64_t> dims)
      : PartialShape(absl::Span<const int64_t>(dims.begin(), dims.size())) {}
  explicit PartialShape(absl::Span<const int64_t> dims);
  // Exactly `shape`.
  explicit PartialShape(const Shape& shape) : dims_(shape.dims().begin(), shape.dims().end()) {}
  // tf.TensorShape(None): any rank.
  static PartialShape UnknownRank();
  // `rank` dimensions, each of any size.
  static PartialShape UnknownDims(int rank);

  bool unknown_rank() const { return unknown_rank_; }
  // -1 when the rank is unknown.
  int rank() const { return unknown_rank_ ? -1 : static_cast<int>(dims_.size()); }
  // Dimension i (< rank()): a size or kUnknownDim.
  int64_t dim(int i) const { return dims_[i]; }
  // Empty when the rank is unknown.
  absl::Span<const int64_t> dims() const { return dims_; }
  // The rank and every dimension known.
  bool IsFullyDefined() const;

  // Whether a tensor of shape `shape` may have this one: the same rank, and the same size in
  // every known dimension.
  bool IsCompatibleWith(const Shape& shape) const;
  // Whether some shape may have both: tf.TensorShape.is_compatible_with.
  bool IsCompatibleWith(const PartialShape& other) const;
  // The most specific shape that every shape compatible with this one or with `other` has
  // (tf.TensorShape.most_specific_compatible_shape): a dimension the two disagree on is unknown,
  // and so is the rank when theirs differ.
  PartialShape MostSpecificCompatibleShape(const PartialShape& other) const;

  // This shape with `dim` inserted before dimension i (i <= rank()), or without dimension i
  // (i < rank()); a shape of unknown rank stays so.
  void InsertDim(int i, int64_t dim);
  void RemoveDim(int i);

  // "[2, ?]", "[]" for a scalar, "<unknown>" for an unknown rank.
  std::string DebugString() const;

  friend bool operator==(const PartialShape& a, const PartialShape& b) {
    return a.unknown_rank_ == b.unknown_rank_ && a.dims_ == b.dims_;
  }
  friend bool operator!=(const PartialShape& a, const PartialShape& b) { return !(a == b); }

 private:
  bool unknown_rank_ = false;
  absl::InlinedVector<int64_t, 4> dims_;  // empty when unknown_rank_
};

}  // namespace sluice

#endif  // SLUICE_CORE_PARTIAL_SHAPE_H_
