#ifndef SLUICE_TRAIN_OPS_DROPOUT_H_
#define SLUICE_TRAIN_OPS_DROPOUT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

struct DropoutOptions {
  float rate = 0.5f;  // fraction of elements zeroed, in [0, 1)
  uint64_t seed = 0;  // the same seed and shape drop the same elements
};

// Inverted dropout: kept elements are scaled by 1 / (1 - rate) so that the
// expectation is unchanged. Always drops; a layer skips it at inference.
absl::StatusOr<Tensor> Dropout(const Tensor& x, DropoutOptions options = {});

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_DROPOUT_H_
