#include "train/ops/softmax.h"

#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> Softmax(const Tensor& logits_in) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor logits, AutoCast(logits_in));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(logits, "Softmax", "logits"));
  if (logits.rank() < 1) return absl::InvalidArgumentError("Softmax: logits must have rank >= 1");
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("Softmax", {&logits}));
  SLUICE_ASSIGN_OR_RETURN(Tensor y, backend->Allocate(DType::kFloat32, logits.shape()));
  SLUICE_RETURN_IF_ERROR(backend->Softmax(logits, y));
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics("Softmax", y));
  if (autodiff::ShouldRecord({logits})) {
    autodiff::RecordOperation(
        {logits}, y,
        [backend, y](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          SLUICE_ASSIGN_OR_RETURN(Tensor gx, backend->Allocate(DType::kFloat32, y.shape()));
          SLUICE_RETURN_IF_ERROR(backend->SoftmaxBackward(y, g, gx));
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return y;
}

}  // namespace sluice::train::ops
