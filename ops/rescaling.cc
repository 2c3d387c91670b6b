#include "ops/rescaling.h"

#include "absl/strings/str_cat.h"

namespace sluice {

absl::StatusOr<Tensor> Rescaling::Apply(const Tensor& x) const {
  Tensor out(DType::kFloat32, x.shape());
  float* dst = out.data<float>();
  const int64_t n = x.num_elements();
  // volatile: the multiply is rounded before the add, never fused into one FMA.
  if (x.dtype() == DType::kFloat32) {
    const float* src = x.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      volatile float scaled = src[i] * scale_;
      dst[i] = scaled + offset_;
    }
  } else if (x.dtype() == DType::kUint8) {
    const uint8_t* src = x.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      volatile float scaled = static_cast<float>(src[i]) * scale_;
      dst[i] = scaled + offset_;
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("Rescaling: expected uint8 or float32, got ", DTypeName(x.dtype())));
  }
  return out;
}

}  // namespace sluice
