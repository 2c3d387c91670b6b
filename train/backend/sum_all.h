#ifndef SLUICE_TRAIN_BACKEND_SUM_ALL_H_
#define SLUICE_TRAIN_BACKEND_SUM_ALL_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::backend {

// The sum of every element of float32 `x` as float32 [1], computed on x's
// device and left there (0 for an empty tensor): metrics and the global norm
// reduce this way so that only the final number ever comes back.
absl::StatusOr<Tensor> SumAll(const Tensor& x);

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_SUM_ALL_H_
