#include "train/layers/global_avg_pool.h"

#include "absl/strings/str_cat.h"
#include "train/ops/reduce.h"

namespace sluice::train::layers {
absl::StatusOr<Tensor> GlobalAvgPool::Forward(const Tensor& input, bool) {
  if (input.rank() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GlobalAvgPool: expected NHWC input of rank 4, got ", input.shape().DebugString()));
  }
  return ops::Mean(input, {1, 2});
}

}  // namespace sluice::train::layers
