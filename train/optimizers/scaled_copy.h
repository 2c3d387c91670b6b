#ifndef SLUICE_TRAIN_OPTIMIZERS_SCALED_COPY_H_
#define SLUICE_TRAIN_OPTIMIZERS_SCALED_COPY_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::optimizers {

// `scale` times float32 `gradient`, in a new tensor on its device (named `caller` in errors).
// Not in place: the tape may hand one gradient buffer to several variables. Clipping and loss
// scaling rescale gradients with it.
absl::StatusOr<Tensor> ScaledCopy(const Tensor& gradient, float scale, const char* caller);

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_SCALED_COPY_H_
