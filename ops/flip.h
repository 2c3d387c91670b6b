#ifndef SLUICE_OPS_FLIP_H_
#define SLUICE_OPS_FLIP_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice {

// Mirrors a [height, width, channels] image (HWC, any numeric dtype) left to right, into a new
// tensor.
absl::StatusOr<Tensor> FlipLeftRight(const Tensor& image);

// FlipLeftRight with probability 1/2, decided by `seed` alone (a per-element seed such as
// ElementContext::seed; the decision uses its own CounterRng stream, so it is independent of a
// random crop drawn from the same seed). Not flipping returns `image` itself (same buffer).
absl::StatusOr<Tensor> RandomFlipLeftRight(const Tensor& image, uint64_t seed);

// Whether RandomFlipLeftRight flips for `seed`.
bool RandomFlipDecision(uint64_t seed);

}  // namespace sluice

#endif  // SLUICE_OPS_FLIP_H_
