#include "train/ops/autocast.h"

#include "train/ops/cast.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> AutoCast(const Tensor& x) {
  if (x.dtype() != DType::kBFloat16) return x;
  return Cast(x, DType::kFloat32);
}

}  // namespace sluice::train::ops
