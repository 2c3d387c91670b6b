#include "train/backend/require_float32.h"

#include "absl/strings/str_cat.h"

namespace sluice::train::backend {

absl::Status RequireFloat32(const Tensor& t, absl::string_view op, absl::string_view what) {
  if (t.dtype() != DType::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": ", what, " must be float32, got ", DTypeName(t.dtype())));
  }
  return absl::OkStatus();
}

}  // namespace sluice::train::backend
