#include "train/layers/global_max_pool.h"

#include "absl/strings/str_cat.h"
#include "train/ops/reduce.h"

namespace sluice::train::layers {

absl::StatusOr<Tensor> GlobalMaxPool::Forward(const Tensor& input, bool) {
  if (input.rank() != 4 || input.dim(1) < 1 || input.dim(2) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("GlobalMaxPool: expected NHWC input of rank 4 with at least one pixel, got ",
                     input.shape().DebugString()));
  }
  return ops::Max(input, {1, 2}, options_.keepdims);
}

}  // namespace sluice::train::layers
