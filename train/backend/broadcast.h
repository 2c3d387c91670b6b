#ifndef SLUICE_TRAIN_BACKEND_BROADCAST_H_
#define SLUICE_TRAIN_BACKEND_BROADCAST_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::backend {

// NumPy broadcasting of two shapes: dims aligned from the right, each pair
// equal or one of them 1.
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// Element strides of `in` read as the broadcast shape `out`: 0 along the dims
// `in` repeats. One stride per dim of `out`.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out);

// Calls fn(i, offset_a, offset_b) for every flat index i of `out`, with the
// offsets of the elements of the two broadcast inputs it reads.
template <typename Fn>
void ForEachBroadcast(const Shape& out, const std::vector<int64_t>& stride_a,
                      const std::vector<int64_t>& stride_b, Fn fn) {
  const int rank = out.rank();
  std::vector<int64_t> index(rank, 0);
  int64_t oa = 0, ob = 0;
  const int64_t n = out.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    fn(i, oa, ob);
    for (int d = rank - 1; d >= 0; --d) {  // odometer increment
      oa += stride_a[d];
      ob += stride_b[d];
      if (++index[d] < out.dim(d)) break;
      oa -= stride_a[d] * out.dim(d);
      ob -= stride_b[d] * out.dim(d);
      index[d] = 0;
    }
  }
}

// Which dims of `out` an operand of `shape` repeats along when broadcast to it:
// the dims a backend reduces over to sum a gradient back to the operand.
std::vector<bool> RepeatedDims(const Shape& shape, const Shape& out);

// `t` with leading 1s up to `out`'s rank, sharing its buffer.
absl::StatusOr<Tensor> AsRankOf(const Tensor& t, const Shape& out);

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_BROADCAST_H_
