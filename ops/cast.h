#ifndef SLUICE_OPS_CAST_H_
#define SLUICE_OPS_CAST_H_

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace sluice {

// Converts a tensor (any shape) between the numeric dtypes uint8, int32, int64, float16, bfloat16
// and float32, element by element:
//  - to an integer type: floating-point values truncate toward zero (as C++ and tf.cast do), then
//    every value out of the target's range saturates to its minimum or maximum (tf.saturate_cast;
//    plain tf.cast wraps or is undefined there). NaN becomes 0;
//  - to float32: integers round to nearest (int64 and large int32 values may lose low bits);
//    float16 and bfloat16 widen exactly;
//  - to float16 or bfloat16: via float32, rounding to nearest even; out-of-range values become
//    infinities (float16 overflows above 65504).
// Casting to the tensor's own dtype returns it unchanged (same buffer). kBytes is InvalidArgument.
absl::StatusOr<Tensor> Cast(const Tensor& tensor, DType dtype);

}  // namespace sluice

#endif  // SLUICE_OPS_CAST_H_
