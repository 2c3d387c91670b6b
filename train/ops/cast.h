#ifndef SLUICE_TRAIN_OPS_CAST_H_
#define SLUICE_TRAIN_OPS_CAST_H_

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// tf.cast between float32, int32 and int64, on x's device, and between float32 and bfloat16:
// bfloat16 to float32 always (exact), float32 to bfloat16 on a backend that reads bfloat16
// operands (the CPU under mixed_bfloat16: round to nearest even).
// Float to integer truncates toward zero, saturating at the integer's range (NaN gives 0); int64
// to int32 keeps the low 32 bits. A cast to x's own dtype returns x. Gradients flow only from
// float to float (cast back to the input's type): an integer has none, as in TF.
absl::StatusOr<Tensor> Cast(const Tensor& x, DType dtype);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_CAST_H_
