#ifndef SLUICE_CORE_SHAPE_H_
#define SLUICE_CORE_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sluice {

// The dimensions of a tensor. A scalar has rank 0 and one element.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(absl::Span<const int64_t> dims) : dims_(dims.begin(), dims.end()) {}

  // Dimensions read from bytes nobody vouches for (a checkpoint, a cache file): InvalidArgument
  // for a negative dimension or more than kMaxElements elements, so that num_elements() and
  // byte sizes cannot overflow. Callers then compare the count with the bytes actually present
  // before allocating anything.
  static absl::StatusOr<Shape> FromUntrustedDims(absl::Span<const int64_t> dims);
  // 2^59: any tensor's byte size (at most 16 bytes per element) stays below 2^63.
  static constexpr int64_t kMaxElements = int64_t{1} << 59;

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  int64_t operator[](int i) const { return dims_[i]; }
  absl::Span<const int64_t> dims() const { return dims_; }
  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    return n;
  }

  void set_dim(int i, int64_t d) { dims_[i] = d; }
  void AddDim(int64_t d) { dims_.push_back(d); }
  void InsertDim(int i, int64_t d) { dims_.insert(dims_.begin() + i, d); }
  void RemoveDim(int i) { dims_.erase(dims_.begin() + i); }

  // "[2, 3]"; "[]" for a scalar.
  std::string DebugString() const;

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  absl::InlinedVector<int64_t, 4> dims_;
};

}  // namespace sluice

#endif  // SLUICE_CORE_SHAPE_H_
