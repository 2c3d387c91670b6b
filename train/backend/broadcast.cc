#include "train/backend/broadcast.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sluice::train::backend {

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int d = 0; d < rank; ++d) {
    const int da = d - (rank - a.rank()), db = d - (rank - b.rank());
    const int64_t x = da >= 0 ? a.dim(da) : 1, y = db >= 0 ? b.dim(db) : 1;
    if (x != y && x != 1 && y != 1) {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", a.DebugString(), " and ",
                                                     b.DebugString(), " do not broadcast (dim ", d,
                                                     ": ", x, " vs ", y, ")"));
    }
    out.AddDim(x == 1 ? y : x);
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.rank(), 0);
  int64_t stride = 1;
  for (int d = in.rank() - 1; d >= 0; --d) {
    const int od = d + (out.rank() - in.rank());
    strides[od] = in.dim(d) == 1 ? 0 : stride;
    stride *= in.dim(d);
  }
  return strides;
}

std::vector<bool> RepeatedDims(const Shape& shape, const Shape& out) {
  std::vector<bool> reduced(out.rank(), false);
  for (int d = 0; d < out.rank(); ++d) {
    const int sd = d - (out.rank() - shape.rank());
    reduced[d] = (sd < 0 || shape.dim(sd) == 1) && out.dim(d) != 1;
  }
  return reduced;
}

absl::StatusOr<Tensor> AsRankOf(const Tensor& t, const Shape& out) {
  Shape kept;
  for (int d = 0; d < out.rank() - t.rank(); ++d) kept.AddDim(1);
  for (int64_t v : t.shape().dims()) kept.AddDim(v);
  return t.Reshape(kept);
}

}  // namespace sluice::train::backend
