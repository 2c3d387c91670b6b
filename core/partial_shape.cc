#include "core/partial_shape.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {

PartialShape::PartialShape(absl::Span<const int64_t> dims) : dims_(dims.begin(), dims.end()) {
  for (int64_t& d : dims_) d = std::max(d, kUnknownDim);
}

PartialShape PartialShape::UnknownRank() {
  PartialShape s;
  s.unknown_rank_ = true;
  return s;
}

PartialShape PartialShape::UnknownDims(int rank) {
  PartialShape s;
  s.dims_.assign(static_cast<size_t>(std::max(rank, 0)), kUnknownDim);
  return s;
}

bool PartialShape::IsFullyDefined() const {
  return !unknown_rank_ &&
         std::none_of(dims_.begin(), dims_.end(), [](int64_t d) { return d == kUnknownDim; });
}

bool PartialShape::IsCompatibleWith(const Shape& shape) const {
  if (unknown_rank_) return true;
  if (shape.rank() != rank()) return false;
  for (int i = 0; i < shape.rank(); ++i) {
    if (dims_[i] != kUnknownDim && dims_[i] != shape.dim(i)) return false;
  }
  return true;
}

bool PartialShape::IsCompatibleWith(const PartialShape& other) const {
  if (unknown_rank_ || other.unknown_rank_) return true;
  if (rank() != other.rank()) return false;
  for (size_t i = 0; i < dims_.size(); ++i) {
    const int64_t a = dims_[i];
    const int64_t b = other.dims_[i];
    if (a != kUnknownDim && b != kUnknownDim && a != b) return false;
  }
  return true;
}

PartialShape PartialShape::MostSpecificCompatibleShape(const PartialShape& other) const {
  if (unknown_rank_ || other.unknown_rank_ || rank() != other.rank()) return UnknownRank();
  PartialShape out = *this;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i] != other.dims_[i]) out.dims_[i] = kUnknownDim;
  }
  return out;
}

void PartialShape::InsertDim(int i, int64_t dim) {
  if (!unknown_rank_) dims_.insert(dims_.begin() + i, std::max(dim, kUnknownDim));
}

void PartialShape::RemoveDim(int i) {
  if (!unknown_rank_) dims_.erase(dims_.begin() + i);
}

std::string PartialShape::DebugString() const {
  if (unknown_rank_) return "<unknown>";
  return absl::StrCat("[",
                      absl::StrJoin(dims_, ", ",
                                    [](std::string* out, int64_t d) {
                                      if (d == kUnknownDim) {
                                        out->push_back('?');
                                      } else {
                                        absl::StrAppend(out, d);
                                      }
                                    }),
                      "]");
}

}  // namespace sluice
